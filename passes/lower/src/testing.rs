//! Helpers of this crate's unit tests: printed IR as trimmed lines, to compare with expected
//! text written inline.

/// The printed module's lines, trimmed, without the `module {` around them.
pub(crate) fn printed(module: &melior::ir::Module) -> Vec<String> {
    let text = module.as_operation().to_string();
    let lines: Vec<String> = text.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    assert_eq!((lines.first().map(String::as_str), lines.last().map(String::as_str)), (Some("module {"), Some("}")));
    lines[1..lines.len() - 1].to_vec()
}

/// `expected`'s lines, trimmed, without blank ones.
pub(crate) fn lines(expected: &str) -> Vec<String> {
    expected.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}
