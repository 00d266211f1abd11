//! The process-wide deadline: one monotonic end time that every network call, git call and lock
//! wait is bounded by. It never sleeps and never reads the wall clock.

use std::time::{Duration, Instant};

/// A point in monotonic time after which no more work may start.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    end: Instant,
}

impl Deadline {
    /// A deadline `budget` after `start` (normally the process start).
    #[must_use]
    pub fn new(start: Instant, budget: Duration) -> Self {
        Self {
            start,
            end: start + budget,
        }
    }

    /// A deadline `budget` from now.
    #[must_use]
    pub fn after(budget: Duration) -> Self {
        Self::new(Instant::now(), budget)
    }

    /// Time left, zero once passed.
    #[must_use]
    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    #[must_use]
    pub fn expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// The smaller of `limit` and the time left.
    #[must_use]
    pub fn cap(&self, limit: Duration) -> Duration {
        limit.min(self.remaining())
    }

    /// A tighter deadline: the earlier of this one and `limit` from now.
    #[must_use]
    pub fn within(&self, limit: Duration) -> Self {
        let end = (Instant::now() + limit).min(self.end);
        Self {
            start: self.start,
            end,
        }
    }

    /// When this deadline started.
    #[must_use]
    pub fn started(&self) -> Instant {
        self.start
    }
}
