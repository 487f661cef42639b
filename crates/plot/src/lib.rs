//! Small SVG charts for remat-opt's benchmarks (`remat-bench`) and budget sweeps
//! (`remat-opt --sweep-svg`): a line chart, and a Pareto chart of trade-offs where lower is
//! better on both axes. No dependencies; the output is a deterministic SVG document.
//!
//! ```
//! use remat_plot::{pareto_chart, pareto_front, Axes, Series};
//!
//! // Memory (x) against extra work (y): (60, 10) and (80, 2) trade off; (90, 5) is dominated
//! // by (80, 2), and the input order (100, 0) costs nothing extra.
//! let plans = vec![(60.0, 10.0), (80.0, 2.0), (90.0, 5.0), (100.0, 0.0)];
//! assert_eq!(pareto_front(&plans), vec![(60.0, 10.0), (80.0, 2.0), (100.0, 0.0)]);
//!
//! let axes = Axes { title: "sweep", x_label: "peak (% of baseline)", y_label: "overhead (%)", log_x: false, log_y: false };
//! let svg = pareto_chart(&axes, &[Series { name: "greedy".into(), points: plans }]);
//! assert!(svg.starts_with("<svg") && svg.contains("greedy"));
//! ```

#![deny(missing_docs)]

/// One series of a chart: a name for the legend and its points `(x, y)`. Points that are not
/// finite (or not positive on a log axis) are left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points, in the order a line chart connects them.
    pub points: Vec<(f64, f64)>,
}

/// Title, axis labels and scales.
#[derive(Clone, Copy, Debug)]
pub struct Axes<'a> {
    /// Title above the plot.
    pub title: &'a str,
    /// Label under the x axis.
    pub x_label: &'a str,
    /// Label beside the y axis.
    pub y_label: &'a str,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
/// Margins around the plot area (the legend sits in the right one).
const LEFT: f64 = 80.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// Renders `series` as lines with a marker at every point.
pub fn line_chart(axes: &Axes<'_>, series: &[Series]) -> String {
    annotated_line_chart(axes, series, &[], &[])
}

/// A horizontal line across the plot (a budget, a time limit), dashed, named at its right end.
#[derive(Clone, Debug, PartialEq)]
pub struct Guide {
    /// The label.
    pub name: String,
    /// Where it crosses the y axis.
    pub y: f64,
}

/// Where a series stopped short (a planner out of time): a cross in the series' colour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stop {
    /// Index of the series in the chart.
    pub series: usize,
    /// Where to draw the cross.
    pub point: (f64, f64),
}

/// [`line_chart`] with guides and stops.
pub fn annotated_line_chart(axes: &Axes<'_>, series: &[Series], guides: &[Guide], stops: &[Stop]) -> String {
    let extra: Vec<(f64, f64)> = stops.iter().map(|s| s.point).chain(guides.iter().map(|g| (f64::NAN, g.y))).collect();
    let frame = Frame::new(axes, series, 0.0, &extra);
    let mut svg = frame.open();
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points = frame.visible(&s.points);
        let path: Vec<String> = points.iter().map(|&p| frame.xy(p)).collect();
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        );
        for &(x, y) in &points {
            svg +=
                &format!("<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n", frame.px(x), frame.py(y));
        }
        svg += &legend_entry(i, colour, &s.name, false);
    }
    for stop in stops {
        if frame.visible(&[stop.point]).is_empty() {
            continue;
        }
        let colour = COLOURS[stop.series % COLOURS.len()];
        let (cx, cy) = (frame.px(stop.point.0), frame.py(stop.point.1));
        svg += &format!(
            "<path d=\"M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}\" stroke=\"{colour}\" stroke-width=\"2.5\"/>\n",
            cx - 5.0,
            cy - 5.0,
            cx + 5.0,
            cy + 5.0,
            cx - 5.0,
            cy + 5.0,
            cx + 5.0,
            cy - 5.0
        );
    }
    svg += &frame.guides(guides);
    svg += "</svg>\n";
    svg
}

/// Renders each series as a step function — `(x, y)` holds `y` from `x` to the next point's
/// `x` — without markers: memory over the steps of a schedule. Runs of equal `y` are drawn as
/// one segment, so long schedules stay small.
pub fn timeline_chart(axes: &Axes<'_>, series: &[Series], guides: &[Guide]) -> String {
    let extra: Vec<(f64, f64)> = guides.iter().map(|g| (f64::NAN, g.y)).collect();
    let frame = Frame::new(axes, series, 0.0, &extra);
    let mut svg = frame.open();
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points = frame.visible(&s.points);
        let mut path: Vec<String> = Vec::with_capacity(2 * points.len());
        for (k, &(x, y)) in points.iter().enumerate() {
            if k == 0 {
                path.push(frame.xy((x, y)));
            } else if points[k - 1].1 != y {
                path.push(frame.xy((x, points[k - 1].1)));
                path.push(frame.xy((x, y)));
            } else if k + 1 == points.len() {
                path.push(frame.xy((x, y)));
            }
        }
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
            path.join(" ")
        );
        svg += &legend_entry(i, colour, &s.name, false);
    }
    svg += &frame.guides(guides);
    svg += "</svg>\n";
    svg
}

/// Renders `series` as a Pareto chart, for trade-offs where lower is better on both axes:
/// every point as a marker (filled on the series' Pareto front, hollow when another point of
/// the series dominates it), and the front as a step line — at each x, the best y the series
/// reaches with at most that x.
///
/// Series often share points (strategies that find the same plan), so they are layered: the
/// first series is drawn widest and with the largest markers, each later one narrower on top,
/// and a shared point shows as concentric rings, a shared step as stripes.
pub fn pareto_chart(axes: &Axes<'_>, series: &[Series]) -> String {
    let frame = Frame::new(axes, series, 0.0, &[]);
    let mut svg = frame.open();
    // Layers from the top: the last series with points is layer 0.
    let mut layer = series.iter().filter(|s| !frame.visible(&s.points).is_empty()).count();
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points = frame.visible(&s.points);
        if !points.is_empty() {
            layer -= 1;
        }
        let (width, radius) = (1.5 + 1.25 * layer as f64, 3.0 + 1.25 * layer as f64);
        let front = pareto_front(&points);
        let mut steps = Vec::with_capacity(2 * front.len());
        for (k, &(x, y)) in front.iter().enumerate() {
            if k > 0 {
                steps.push(frame.xy((x, front[k - 1].1)));
            }
            steps.push(frame.xy((x, y)));
        }
        if steps.len() > 1 {
            svg += &format!(
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\" points=\"{}\"/>\n",
                steps.join(" ")
            );
        }
        let mut drawn: Vec<(f64, f64)> = Vec::new();
        for &(x, y) in &points {
            if drawn.contains(&(x, y)) {
                continue;
            }
            drawn.push((x, y));
            let fill = if front.contains(&(x, y)) { colour } else { "white" };
            svg += &format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>\n",
                frame.px(x),
                frame.py(y)
            );
        }
        svg += &legend_entry(i, colour, &s.name, true);
    }
    svg += "</svg>\n";
    svg
}

/// The points no other point dominates (is at most as large on both axes and smaller on
/// one), sorted by x; duplicates appear once. Along the front x rises and y falls. Points that
/// are not finite are ignored.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<(f64, f64)> = points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut front: Vec<(f64, f64)> = Vec::new();
    for p in sorted {
        // Sorted by x then y: p is dominated exactly when some earlier point has y ≤ p.y,
        // and the last point kept has the least y so far.
        if front.last().is_none_or(|last| p.1 < last.1) {
            front.push(p);
        }
    }
    front
}

/// The plot area: data bounds (on the mapped, possibly logarithmic scale), ticks and pixel
/// mapping.
struct Frame<'a> {
    axes: &'a Axes<'a>,
    x: Scale,
    y: Scale,
}

/// One axis: its bounds on the mapped scale, and where its ticks go.
struct Scale {
    low: f64,
    high: f64,
    /// Tick positions on the mapped scale.
    ticks: Vec<f64>,
    /// Distance between linear ticks (decides their decimals); 0 on a log axis.
    step: f64,
}

impl Scale {
    /// Bounds for data spanning `[low, high]` (mapped), widened by `pad` of the span on each
    /// side (never below 0 for data that is not), then to whole ticks on a linear axis; five
    /// evenly spaced ticks on a logarithmic one.
    fn new(low: f64, high: f64, pad: f64, log: bool) -> Self {
        let floor = if !log && low >= 0.0 { 0.0 } else { f64::NEG_INFINITY };
        let (low, high) = if high - low < 1e-12 { (low - 1.0, high + 1.0) } else { (low, high) };
        let margin = pad * (high - low);
        let (low, high) = ((low - margin).max(floor), high + margin);
        if log {
            let ticks = (0..=4).map(|i| low + i as f64 / 4.0 * (high - low)).collect();
            return Scale { low, high, ticks, step: 0.0 };
        }
        let step = nice_step((high - low) / 5.0);
        let (first, last) = ((low / step).floor() as i64, (high / step).ceil() as i64);
        Scale {
            low: first as f64 * step,
            high: last as f64 * step,
            ticks: (first..=last).map(|k| k as f64 * step).collect(),
            step,
        }
    }

    /// `v` (mapped) as a fraction of the way from `low` to `high`.
    fn fraction(&self, v: f64) -> f64 {
        (v - self.low) / (self.high - self.low)
    }
}

/// The step among 1, 2, 2.5 and 5 times a power of ten nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let f = raw / magnitude;
    let nice = [1.0, 2.0, 2.5, 5.0].into_iter().find(|&n| f <= n).unwrap_or(10.0);
    nice * magnitude
}

impl<'a> Frame<'a> {
    /// Bounds that hold every visible point of `series` and the y of every `extra` point
    /// (its x too, where finite), widened by `pad` of their span on each side; a linear y axis
    /// always includes 0.
    fn new(axes: &'a Axes<'a>, series: &[Series], pad: f64, extra: &[(f64, f64)]) -> Self {
        let (mut x, mut y) = ((f64::INFINITY, f64::NEG_INFINITY), (f64::INFINITY, f64::NEG_INFINITY));
        for s in series {
            for (px, py) in visible(axes, &s.points) {
                let (px, py) = (map(px, axes.log_x), map(py, axes.log_y));
                x = (x.0.min(px), x.1.max(px));
                y = (y.0.min(py), y.1.max(py));
            }
        }
        if x.0.is_finite() {
            let (lx, ly) = (Axes { log_x: false, ..*axes }, Axes { log_y: false, ..*axes });
            for &(px, py) in extra {
                if !visible(&ly, &[(px, 0.0)]).is_empty() {
                    x = (x.0.min(map(px, axes.log_x)), x.1.max(map(px, axes.log_x)));
                }
                if !visible(&lx, &[(0.0, py)]).is_empty() {
                    y = (y.0.min(map(py, axes.log_y)), y.1.max(map(py, axes.log_y)));
                }
            }
        }
        if !x.0.is_finite() {
            (x, y) = ((0.0, 1.0), (0.0, 1.0));
        }
        if !axes.log_y {
            y.0 = y.0.min(0.0);
        }
        Frame { axes, x: Scale::new(x.0, x.1, pad, axes.log_x), y: Scale::new(y.0, y.1, pad, axes.log_y) }
    }

    /// The points that can be drawn.
    fn visible(&self, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
        visible(self.axes, points)
    }

    fn size() -> (f64, f64) {
        (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM)
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + self.x.fraction(map(x, self.axes.log_x)) * Self::size().0
    }

    fn py(&self, y: f64) -> f64 {
        let h = Self::size().1;
        TOP + h - self.y.fraction(map(y, self.axes.log_y)) * h
    }

    fn xy(&self, (x, y): (f64, f64)) -> String {
        format!("{:.1},{:.1}", self.px(x), self.py(y))
    }

    /// Dashed horizontal lines, each named at its right end.
    fn guides(&self, guides: &[Guide]) -> String {
        let mut svg = String::new();
        for g in guides {
            if visible(&Axes { log_x: false, ..*self.axes }, &[(0.0, g.y)]).is_empty() {
                continue;
            }
            let (x0, x1, gy) = (LEFT, WIDTH - RIGHT, self.py(g.y));
            svg += &format!(
                "<line x1=\"{x0}\" y1=\"{gy:.1}\" x2=\"{x1}\" y2=\"{gy:.1}\" stroke=\"#555\" stroke-dasharray=\"6,4\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n",
                x1 - 4.0,
                gy - 4.0,
                escape(&g.name)
            );
        }
        svg
    }

    /// The document's opening: background, title, frame, grid with tick labels, axis labels.
    fn open(&self) -> String {
        let (axes, (plot_w, plot_h)) = (self.axes, Self::size());
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n\
             <rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#444\"/>\n",
            LEFT + plot_w / 2.0,
            escape(axes.title)
        );
        let label =
            |v: f64, scale: &Scale, log: bool| if log { tick(10f64.powf(v)) } else { linear_tick(v, scale.step) };
        for &v in &self.x.ticks {
            let gx = LEFT + self.x.fraction(v) * plot_w;
            svg += &format!(
                "<line x1=\"{gx:.1}\" y1=\"{TOP}\" x2=\"{gx:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{gx:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                TOP + plot_h,
                TOP + plot_h + 18.0,
                label(v, &self.x, axes.log_x)
            );
        }
        for &v in &self.y.ticks {
            let gy = TOP + plot_h - self.y.fraction(v) * plot_h;
            svg += &format!(
                "<line x1=\"{LEFT}\" y1=\"{gy:.1}\" x2=\"{}\" y2=\"{gy:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
                LEFT + plot_w,
                LEFT - 6.0,
                gy + 4.0,
                label(v, &self.y, axes.log_y)
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
        svg
    }
}

/// The `index`th legend entry: a line in the series' colour (with a marker), then its name.
fn legend_entry(index: usize, colour: &str, name: &str, marker: bool) -> String {
    let ly = TOP + 10.0 + 18.0 * index as f64;
    let (x0, x1) = (WIDTH - RIGHT + 10.0, WIDTH - RIGHT + 30.0);
    let mut s =
        format!("<line x1=\"{x0}\" y1=\"{ly}\" x2=\"{x1}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"/>");
    if marker {
        s += &format!("<circle cx=\"{}\" cy=\"{ly}\" r=\"3.5\" fill=\"{colour}\"/>", (x0 + x1) / 2.0);
    }
    s += &format!("<text x=\"{}\" y=\"{}\">{}</text>\n", x1 + 5.0, ly + 4.0, escape(name));
    s
}

/// The points that can be drawn on `axes`: finite, and positive on a logarithmic axis.
fn visible(axes: &Axes<'_>, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let ok = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    points.iter().copied().filter(|&(x, y)| ok(x, axes.log_x) && ok(y, axes.log_y)).collect()
}

/// A linear tick: as many decimals as the step needs, exponent notation from a million.
fn linear_tick(v: f64, step: f64) -> String {
    let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
    if v.abs() >= 1e6 {
        return format!("{v:.2e}");
    }
    let decimals = (0..=12)
        .find(|&d| {
            let scaled = step * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(12) as usize;
    format!("{v:.decimals$}")
}

fn map(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
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
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const AXES: Axes<'static> = Axes { title: "t", x_label: "x", y_label: "y", log_x: false, log_y: false };

    #[test]
    fn front_keeps_undominated_points_once() {
        let points = [(3.0, 1.0), (1.0, 5.0), (2.0, 5.0), (1.0, 5.0), (2.0, 2.0), (3.0, 0.5), (f64::NAN, 0.0)];
        assert_eq!(pareto_front(&points), vec![(1.0, 5.0), (2.0, 2.0), (3.0, 0.5)]);
        assert_eq!(pareto_front(&[]), Vec::<(f64, f64)>::new());
    }

    #[test]
    fn pareto_chart_marks_dominated_points_hollow() {
        let svg =
            pareto_chart(&AXES, &[Series { name: "a<b".into(), points: vec![(1.0, 2.0), (2.0, 3.0), (3.0, 0.0)] }]);
        assert_eq!(svg.matches("<circle").count(), 4, "three points and the legend marker");
        assert_eq!(svg.matches("fill=\"white\" stroke").count(), 1, "(2, 3) is dominated");
        assert!(svg.contains("a&lt;b"));
        // The step line: (1,2) → (3,2) → (3,0).
        assert_eq!(svg.matches("<polyline").count(), 1);
    }

    #[test]
    fn timelines_draw_runs_as_one_segment_and_guides_widen_the_axis() {
        let flat = Series {
            name: "before".into(),
            points: (0..100).map(|i| (i as f64, if i < 50 { 10.0 } else { 20.0 })).collect(),
        };
        let svg = timeline_chart(&AXES, &[flat], &[Guide { name: "budget".into(), y: 40.0 }]);
        let polyline = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        // Only where y changes: the start, the rise at 50 (two corners), and the end.
        assert_eq!(polyline.matches(',').count(), 4, "{polyline}");
        assert!(svg.contains("stroke-dasharray") && svg.contains(">budget<"));
        // The guide at 40 is inside the y range: the top tick is at least 40.
        assert!(svg.contains(">40<"), "{svg}");
    }

    #[test]
    fn stops_are_crosses_in_their_series_colour() {
        let series = [
            Series { name: "a".into(), points: vec![(1.0, 1.0), (2.0, 2.0)] },
            Series { name: "b".into(), points: vec![(1.0, 3.0)] },
        ];
        let svg = annotated_line_chart(
            &AXES,
            &series,
            &[Guide { name: "limit".into(), y: 5.0 }],
            &[Stop { series: 1, point: (2.0, 5.0) }],
        );
        assert_eq!(svg.matches("<path").count(), 1);
        assert!(svg.contains(&format!("stroke=\"{}\" stroke-width=\"2.5\"", COLOURS[1])));
    }

    #[test]
    fn charts_survive_empty_and_degenerate_input() {
        for series in [vec![], vec![Series { name: "s".into(), points: vec![(f64::INFINITY, 1.0), (0.0, -1.0)] }]] {
            for log in [false, true] {
                let axes = Axes { log_x: log, log_y: log, ..AXES };
                let guides = [Guide { name: "g".into(), y: f64::NAN }, Guide { name: "h".into(), y: -1.0 }];
                let stops = [Stop { series: 0, point: (f64::NAN, 1.0) }];
                for svg in [
                    line_chart(&axes, &series),
                    pareto_chart(&axes, &series),
                    timeline_chart(&axes, &series, &guides),
                    annotated_line_chart(&axes, &series, &guides, &stops),
                ] {
                    assert!(svg.ends_with("</svg>\n") && !svg.contains("NaN") && !svg.contains("inf"), "{svg}");
                }
            }
        }
    }
}
