//! A minimal line chart in SVG: one polyline with markers per series, optional log axes.

/// One line of the chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Axis settings.
pub struct Axes<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub log_y: bool,
}

const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
/// Margins around the plot area (the legend sits in the right one).
const LEFT: f64 = 80.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// Renders `series` as an SVG document.
pub fn line_chart(axes: &Axes<'_>, series: &[Series]) -> String {
    let map = |v: f64, log: bool| if log { v.max(f64::MIN_POSITIVE).log10() } else { v };
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in points {
        let (x, y) = (map(x, axes.log_x), map(y, axes.log_y));
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if !axes.log_y {
        y0 = y0.min(0.0);
    }
    if x1 - x0 < 1e-12 {
        x1 = x0 + 1.0;
    }
    if y1 - y0 < 1e-12 {
        y1 = y0 + 1.0;
    }
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |x: f64| LEFT + (map(x, axes.log_x) - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + plot_h - (map(y, axes.log_y) - y0) / (y1 - y0) * plot_h;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n\
         <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#444\"/>\n",
        LEFT + plot_w / 2.0,
        escape(axes.title)
    );
    for i in 0..=4 {
        let f = i as f64 / 4.0;
        let (xv, yv) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
        let (xv, yv) = (if axes.log_x { 10f64.powf(xv) } else { xv }, if axes.log_y { 10f64.powf(yv) } else { yv });
        let (gx, gy) = (LEFT + f * plot_w, TOP + plot_h - f * plot_h);
        svg += &format!(
            "<line x1=\"{gx}\" y1=\"{TOP}\" x2=\"{gx}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{gx}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n\
             <line x1=\"{LEFT}\" y1=\"{gy}\" x2=\"{}\" y2=\"{gy}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            TOP + plot_h,
            TOP + plot_h + 18.0,
            tick(xv),
            LEFT + plot_w,
            LEFT - 6.0,
            gy + 4.0,
            tick(yv)
        );
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"18\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">{}</text>\n",
        LEFT + plot_w / 2.0,
        HEIGHT - 18.0,
        escape(axes.x_label),
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(axes.y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = s.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        svg += &format!("<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n", path.join(" "));
        for &(x, y) in &s.points {
            svg += &format!("<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n", px(x), py(y));
        }
        let ly = TOP + 10.0 + 18.0 * i as f64;
        svg += &format!(
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
            WIDTH - RIGHT + 10.0,
            WIDTH - RIGHT + 30.0,
            WIDTH - RIGHT + 35.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg += "</svg>\n";
    svg
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 || (a < 1e-2 && a > 0.0) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
