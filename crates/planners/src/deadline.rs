//! The wall-clock deadline every planner honours (`--time-limit`).
//!
//! One [`Deadline`] is set when planning starts ([`PlannerOptions::with_deadline`]) and travels
//! in the options to everything the request runs: `auto`'s strategies, the ILP's solver, the
//! bisection for the smallest budget, polishing. Planners check it cooperatively inside their
//! loops (a greedy walk's steps, DTR's operations, an elimination ordering's vertices, each
//! candidate of a knob search) and, once it has passed, return the best plan they have with
//! [`StopReason::TimeLimit`](crate::StopReason::TimeLimit), or the input order
//! ([`FallbackCause::TimeLimit`](crate::FallbackCause::TimeLimit)) when they have none yet.
//! Checks are cheap (one clock read); loops that run per element check every
//! [`Deadline::CHECK_EVERY`] iterations through a [`DeadlineProbe`].

use crate::PlannerOptions;
use std::time::{Duration, Instant};

/// An instant after which planning stops, or none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// No deadline: run to the end.
    pub const NONE: Deadline = Deadline(None);

    /// How many iterations a [`DeadlineProbe`] lets pass between clock reads.
    pub const CHECK_EVERY: u32 = 1024;

    /// `seconds` from now (a non-finite or huge limit: none; a negative one: already passed).
    pub fn after(seconds: f64) -> Deadline {
        if seconds.is_nan() {
            return Deadline::NONE;
        }
        match Duration::try_from_secs_f64(seconds.max(0.0)) {
            Ok(d) => Deadline(Instant::now().checked_add(d)),
            Err(_) => Deadline::NONE,
        }
    }

    /// A deadline that has already passed (tests: every planner's path when time is out).
    pub fn passed() -> Deadline {
        Deadline(Some(Instant::now()))
    }

    /// The instant, when one is set.
    pub fn instant(&self) -> Option<Instant> {
        self.0
    }

    /// Whether one is set.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Whether it has passed.
    pub fn expired(&self) -> bool {
        self.0.is_some_and(|at| Instant::now() >= at)
    }

    /// Seconds left (0 once passed); `None` without a deadline.
    pub fn remaining(&self) -> Option<f64> {
        self.0.map(|at| at.saturating_duration_since(Instant::now()).as_secs_f64())
    }

    /// The earlier of the two.
    pub fn min(self, other: Deadline) -> Deadline {
        match (self.0, other.0) {
            (Some(a), Some(b)) => Deadline(Some(a.min(b))),
            (a, b) => Deadline(a.or(b)),
        }
    }

    /// A probe for a hot loop: it reads the clock once every [`Deadline::CHECK_EVERY`] calls.
    pub fn probe(self) -> DeadlineProbe {
        DeadlineProbe { deadline: self, countdown: 0, passed: false }
    }
}

/// [`Deadline::expired`] for hot loops, reading the clock once per [`Deadline::CHECK_EVERY`]
/// calls; once expired, it stays expired.
#[derive(Clone, Debug)]
pub struct DeadlineProbe {
    deadline: Deadline,
    countdown: u32,
    passed: bool,
}

impl DeadlineProbe {
    /// Whether the deadline has passed (checked on the first call and every
    /// [`Deadline::CHECK_EVERY`] calls after).
    pub fn expired(&mut self) -> bool {
        if self.passed || !self.deadline.is_set() {
            return self.passed;
        }
        if self.countdown == 0 {
            self.countdown = Deadline::CHECK_EVERY;
            self.passed = self.deadline.expired();
        }
        self.countdown -= 1;
        self.passed
    }
}

impl PlannerOptions {
    /// These options with their deadline set `time_limit` seconds from now, unless one is set
    /// already (a nested request, such as `auto`'s strategies or a bisection's probes, keeps
    /// its caller's).
    pub fn with_deadline(&self) -> PlannerOptions {
        let mut options = self.clone();
        if !options.deadline.is_set() {
            options.deadline = Deadline::after(self.time_limit);
        }
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_deadline_is_expired_and_none_never_is() {
        assert!(Deadline::passed().expired());
        assert!(!Deadline::NONE.expired());
        assert!(!Deadline::after(f64::INFINITY).is_set());
        assert!(!Deadline::after(f64::NAN).is_set());
        assert!(Deadline::after(-1.0).expired());
        assert!(!Deadline::after(3600.0).expired());
        assert_eq!(Deadline::NONE.remaining(), None);
        assert_eq!(Deadline::passed().remaining(), Some(0.0));
    }

    #[test]
    fn min_keeps_the_earlier() {
        let soon = Deadline::after(1.0);
        let late = Deadline::after(100.0);
        assert_eq!(soon.min(late), soon);
        assert_eq!(late.min(soon), soon);
        assert_eq!(Deadline::NONE.min(late), late);
        assert_eq!(late.min(Deadline::NONE), late);
    }

    #[test]
    fn a_probe_reads_the_clock_on_its_first_call_and_stays_expired() {
        let mut probe = Deadline::passed().probe();
        assert!(probe.expired());
        assert!(probe.expired());
        let mut never = Deadline::NONE.probe();
        assert!((0..5000).all(|_| !never.expired()));
    }

    #[test]
    fn nested_requests_keep_their_callers_deadline() {
        let options = PlannerOptions { time_limit: 3600.0, ..PlannerOptions::default() };
        let outer = options.with_deadline();
        assert!(outer.deadline.is_set() && !outer.deadline.expired());
        let inner = PlannerOptions { time_limit: 0.0, ..outer.clone() }.with_deadline();
        assert_eq!(inner.deadline, outer.deadline);
    }
}
