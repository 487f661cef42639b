//! Byte quantities: parsing budgets (`6GiB`, `512KiB`, `60%`) and printing sizes.

use std::fmt;

/// A memory budget as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage of the baseline (input order, no remat) peak.
    PercentOfBaseline(f64),
}

impl Budget {
    /// The budget in bytes, given the baseline peak.
    pub fn resolve(self, baseline_peak: u64) -> u64 {
        match self {
            Budget::Bytes(b) => b,
            Budget::PercentOfBaseline(p) => ((baseline_peak as f64) * p / 100.0).floor() as u64,
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Bytes(b) => write!(f, "{}", Bytes(*b)),
            Budget::PercentOfBaseline(p) => write!(f, "{p}%"),
        }
    }
}

const UNITS: [(&str, u64); 9] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// A budget that does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// `N%` with N not a non-negative number.
    #[error("invalid percentage '{0}'")]
    Percentage(String),
    /// Not a number of bytes, with or without a unit.
    #[error("invalid budget '{0}': expected bytes, a size such as 6GiB or 512KiB, or a percentage such as 60%")]
    NotASize(String),
    /// A negative or infinite size.
    #[error("invalid budget '{0}'")]
    OutOfRange(String),
}

/// Parses `1234`, `1234B`, `1.5KiB`, `6GiB`, `2GB`, or `60%`.
pub fn parse_budget(text: &str) -> Result<Budget, BudgetError> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let value: f64 = p.trim().parse().map_err(|_| BudgetError::Percentage(text.to_string()))?;
        if !(value.is_finite() && value >= 0.0) {
            return Err(BudgetError::Percentage(text.to_string()));
        }
        return Ok(Budget::PercentOfBaseline(value));
    }
    let (number, scale) =
        UNITS.iter().find_map(|(suffix, scale)| t.strip_suffix(suffix).map(|n| (n.trim(), *scale))).unwrap_or((t, 1));
    let value: f64 = number.parse().map_err(|_| BudgetError::NotASize(text.to_string()))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(BudgetError::OutOfRange(text.to_string()));
    }
    Ok(Budget::Bytes((value * scale as f64).round() as u64))
}

/// Formats a byte count in binary units with three significant digits (`1.50 MiB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b < 1024 {
            return write!(f, "{b} B");
        }
        let (name, scale) = UNITS[..4].iter().find(|(_, s)| b >= *s).copied().unwrap_or(("KiB", 1024));
        let value = b as f64 / scale as f64;
        let digits = if value >= 100.0 {
            0
        } else if value >= 10.0 {
            1
        } else {
            2
        };
        write!(f, "{value:.digits$} {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("1234"), Ok(Budget::Bytes(1234)));
        assert_eq!(parse_budget("2KiB"), Ok(Budget::Bytes(2048)));
        assert_eq!(parse_budget("1.5 MiB"), Ok(Budget::Bytes(1_572_864)));
        assert_eq!(parse_budget("6GB"), Ok(Budget::Bytes(6_000_000_000)));
        assert_eq!(parse_budget("60%"), Ok(Budget::PercentOfBaseline(60.0)));
        assert!(parse_budget("lots").is_err());
        assert!(parse_budget("-5").is_err());
        assert_eq!(Budget::PercentOfBaseline(50.0).resolve(1001), 500);
    }

    #[test]
    fn printing() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(1536).to_string(), "1.50 KiB");
        assert_eq!(Bytes(300 << 20).to_string(), "300 MiB");
    }
}
