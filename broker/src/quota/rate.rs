//! Kafka's quota arithmetic with the clock as input: the windowed rate every byte-rate,
//! request-percentage and replication quota measures (`SampledStat` + `Rate`), the token
//! bucket of the controller mutation quota (KIP-599), and the throttle times they give.
//!
//! A [`Rate`] keeps `samples + 1` windows of `window_ms` each (Kafka keeps one more than
//! `quota.window.num` so the oldest full window is never half-dropped): a record lands in the
//! current window, or opens the next one once the current is `window_ms` old; a window whose
//! last event is `samples * window_ms` old is forgotten. The rate is the windows' sum over the
//! time since the oldest window started, but never over less than `samples - 1` whole windows,
//! so one burst right after a quiet spell is measured over the full quota window (Kafka's
//! `Rate.windowSize`). Nothing here reads a clock; callers pass `now_ms`.

/// The sample windows of a quota: `quota.window.num` windows of `quota.window.size.seconds`
/// (Kafka's defaults 11 and 1), or the `replication.quota.window.*` pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub samples: u32,
    pub window_ms: i64,
}

impl Windows {
    /// Kafka's `quota.window.num` and `quota.window.size.seconds` defaults.
    pub const KAFKA_DEFAULT: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    pub fn new(samples: u32, window_ms: i64) -> Windows {
        assert!(samples >= 1, "quota windows: at least one sample");
        assert!(window_ms >= 1, "quota windows: at least 1 ms each");
        Windows { samples, window_ms }
    }

    /// The most a client may take at once without being throttled whatever it did before:
    /// what the fetch path caps a response at (`maxValueInQuotaWindow`).
    pub fn max_in_quota_window(&self, bound_per_s: f64) -> f64 {
        bound_per_s * f64::from(self.samples.saturating_sub(1)) * self.window_ms as f64 / 1000.0
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    start_ms: i64,
    last_event_ms: i64,
    value: f64,
}

impl Sample {
    fn new(now_ms: i64) -> Sample {
        Sample {
            start_ms: now_ms,
            last_event_ms: now_ms,
            value: 0.0,
        }
    }
}

/// A windowed rate per second (Kafka's `Rate` over a `WindowedSum`).
#[derive(Clone, Debug, Default)]
pub struct Rate {
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    pub fn new() -> Rate {
        Rate::default()
    }

    /// Adds `value` (bytes, a percentage of a thread, ...) at `now_ms`. A negative value
    /// takes back an earlier record (a throttled fetch sends nothing, so its bytes are
    /// unrecorded).
    pub fn record(&mut self, w: Windows, value: f64, now_ms: i64) {
        let mut i = self.current_index(now_ms);
        if now_ms - self.samples[i].start_ms >= w.window_ms {
            i = self.advance(w, now_ms);
        }
        let s = &mut self.samples[i];
        s.value += value;
        s.last_event_ms = now_ms;
    }

    /// The rate per second at `now_ms`.
    pub fn measure(&mut self, w: Windows, now_ms: i64) -> f64 {
        self.purge_obsolete(w, now_ms);
        let sum: f64 = self.samples.iter().map(|s| s.value).sum();
        sum / (self.window_size_ms(w, now_ms) as f64 / 1000.0)
    }

    /// The rate per second at `now_ms` as Kafka's `SimpleRate` measures it (the replication
    /// quotas' stat): over the time since the oldest window started, but never less than one
    /// window. Unlike [`Rate::measure`], a first burst is not spread over the whole quota
    /// window, so a throttle takes hold within the first window.
    pub fn measure_simple(&mut self, w: Windows, now_ms: i64) -> f64 {
        self.purge_obsolete(w, now_ms);
        let sum: f64 = self.samples.iter().map(|s| s.value).sum();
        let span_ms = (now_ms - self.oldest_start_ms(now_ms)).max(w.window_ms);
        sum / (span_ms as f64 / 1000.0)
    }

    /// The span the rate is measured over at `now_ms`, in ms (at least `samples - 1` whole
    /// windows, at least 1 ms).
    pub fn window_size_ms(&mut self, w: Windows, now_ms: i64) -> i64 {
        self.purge_obsolete(w, now_ms);
        let oldest = self.oldest_start_ms(now_ms);
        let mut elapsed = now_ms - oldest;
        let full = elapsed / w.window_ms;
        let min_full = i64::from(w.samples) - 1;
        if full < min_full {
            elapsed += (min_full - full) * w.window_ms;
        }
        elapsed.max(1)
    }

    /// Records `value` and answers how long the client must wait for the rate to come back to
    /// `bound_per_s` (0 when it is within it): Kafka's `recordAndGetThrottleTimeMs`.
    pub fn record_and_throttle_ms(
        &mut self,
        w: Windows,
        bound_per_s: f64,
        value: f64,
        now_ms: i64,
    ) -> i64 {
        self.record(w, value, now_ms);
        self.throttle_ms(w, bound_per_s, now_ms)
    }

    /// How long until the measured rate is back within `bound_per_s` if nothing more is
    /// recorded (Kafka's `QuotaUtils.throttleTime`: the excess as a share of the bound, times
    /// the span measured). 0 when within the bound.
    pub fn throttle_ms(&mut self, w: Windows, bound_per_s: f64, now_ms: i64) -> i64 {
        let observed = self.measure(w, now_ms);
        throttle_ms(observed, bound_per_s, self.window_size_ms(w, now_ms))
    }

    /// Whether anything was recorded within the last `samples` windows (an idle rate may be
    /// dropped: a new one measures the same).
    pub fn is_idle(&self, w: Windows, now_ms: i64) -> bool {
        let expire = i64::from(w.samples) * w.window_ms;
        self.samples
            .iter()
            .all(|s| s.value == 0.0 || now_ms - s.last_event_ms >= expire)
    }

    fn current_index(&mut self, now_ms: i64) -> usize {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
            self.current = 0;
        }
        self.current
    }

    fn advance(&mut self, w: Windows, now_ms: i64) -> usize {
        let slots = w.samples as usize + 1;
        self.current = (self.current + 1) % slots;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(now_ms));
        } else {
            self.samples[self.current] = Sample::new(now_ms);
        }
        debug_assert!(self.samples.len() <= slots);
        self.current
    }

    fn purge_obsolete(&mut self, w: Windows, now_ms: i64) {
        let expire = i64::from(w.samples) * w.window_ms;
        for s in &mut self.samples {
            if now_ms - s.last_event_ms >= expire {
                *s = Sample::new(now_ms);
            }
        }
    }

    fn oldest_start_ms(&mut self, now_ms: i64) -> i64 {
        self.current_index(now_ms);
        self.samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .expect("at least one sample")
    }
}

/// Kafka's throttle time for an `observed` rate over a `bound` measured across `window_ms`:
/// `round((observed - bound) / bound * window_ms)`, 0 when within the bound.
pub fn throttle_ms(observed: f64, bound: f64, window_ms: i64) -> i64 {
    if observed <= bound || bound <= 0.0 {
        return 0;
    }
    ((observed - bound) / bound * window_ms as f64).round() as i64
}

/// Kafka's `TokenBucket` (KIP-599): `rate` tokens per second up to a burst of `rate *
/// samples * window` seconds; a record takes tokens and may take the bucket below zero, and
/// a negative bucket means the quota is exceeded until it refills.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    tokens: f64,
    last_update_ms: Option<i64>,
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::new()
    }
}

impl TokenBucket {
    /// A bucket that starts full (Kafka's starts empty at time 0, which refills it at once).
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            last_update_ms: None,
        }
    }

    fn burst(w: Windows, rate_per_s: f64) -> f64 {
        rate_per_s * f64::from(w.samples) * w.window_ms as f64 / 1000.0
    }

    fn refill(&mut self, w: Windows, rate_per_s: f64, now_ms: i64) {
        let burst = Self::burst(w, rate_per_s);
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last) => {
                (self.tokens + rate_per_s * (now_ms - last).max(0) as f64 / 1000.0).min(burst)
            }
        };
        self.last_update_ms = Some(now_ms);
    }

    /// The tokens left at `now_ms` (negative while over the quota).
    pub fn tokens(&mut self, w: Windows, rate_per_s: f64, now_ms: i64) -> f64 {
        self.refill(w, rate_per_s, now_ms);
        self.tokens
    }

    /// Takes `value` tokens at `now_ms`.
    pub fn record(&mut self, w: Windows, rate_per_s: f64, value: f64, now_ms: i64) {
        self.refill(w, rate_per_s, now_ms);
        self.tokens = (self.tokens - value).min(Self::burst(w, rate_per_s));
    }

    /// How long until the bucket is back at zero (Kafka: `-tokens / rate` seconds), 0 when
    /// it is not negative.
    pub fn throttle_ms(&mut self, w: Windows, rate_per_s: f64, now_ms: i64) -> i64 {
        let tokens = self.tokens(w, rate_per_s, now_ms);
        if tokens >= 0.0 || rate_per_s <= 0.0 {
            return 0;
        }
        (-tokens / rate_per_s * 1000.0).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows::KAFKA_DEFAULT;

    #[test]
    fn a_first_burst_is_measured_over_the_whole_quota_window() {
        let mut r = Rate::new();
        r.record(W, 10_000.0, 0);
        // 10 whole windows of 1 s, not the 0 ms since the first record.
        assert_eq!(r.window_size_ms(W, 0), 10_000);
        assert_eq!(r.measure(W, 0), 1_000.0);
    }

    #[test]
    fn the_span_grows_past_the_minimum_once_records_are_older() {
        let mut r = Rate::new();
        for t in 0..=12 {
            r.record(W, 1_000.0, t * 1_000);
        }
        // 13 windows opened, 12 kept (samples + 1), and the one whose last event is 11 s
        // old forgotten: 11 windows of 1,000 from 2 s on.
        assert_eq!(r.window_size_ms(W, 12_500), 10_500);
        let rate = r.measure(W, 12_500);
        assert!((rate - 11_000.0 / 10.5).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn throttle_time_is_the_excess_as_a_share_of_the_bound_times_the_span() {
        let mut r = Rate::new();
        // 20,000 bytes at once against 1,000 B/s measured over 10 s: 2,000 B/s, twice the
        // bound, so 10 s to come back.
        assert_eq!(r.record_and_throttle_ms(W, 1_000.0, 20_000.0, 0), 10_000);
        // Within the bound: no throttle.
        let mut r = Rate::new();
        assert_eq!(r.record_and_throttle_ms(W, 1_000.0, 9_000.0, 0), 0);
        assert_eq!(r.record_and_throttle_ms(W, 1_000.0, 1_000.0, 0), 0);
        assert_eq!(r.record_and_throttle_ms(W, 1_000.0, 1.0, 0), 1);
    }

    #[test]
    fn a_first_burst_is_held_against_the_whole_window_until_it_rolls_out() {
        // Kafka's estimate: the span is at least 10 windows, so waiting inside them does not
        // lower the measured rate; the burst's window is forgotten 11 s after its last event.
        let mut r = Rate::new();
        assert_eq!(r.record_and_throttle_ms(W, 1_000.0, 15_000.0, 0), 5_000);
        assert_eq!(r.throttle_ms(W, 1_000.0, 5_000), 5_000);
        // Past 10 s the span is the time since the burst: 15,000 over 10.999 s.
        assert_eq!(r.throttle_ms(W, 1_000.0, 10_999), 4_001);
        assert_eq!(r.throttle_ms(W, 1_000.0, 11_000), 0);
    }

    #[test]
    fn windows_older_than_the_quota_window_are_forgotten() {
        let mut r = Rate::new();
        r.record(W, 1_000_000.0, 0);
        assert!(r.throttle_ms(W, 1_000.0, 0) > 0);
        // 11 s later the record's window is obsolete.
        assert!(!r.is_idle(W, 10_999));
        assert!(r.is_idle(W, 11_000));
        let mut later = Rate::new();
        later.record(W, 1.0, 5_000);
        assert!(!later.is_idle(W, 15_999));
        assert!(later.is_idle(W, 16_000));
        assert_eq!(r.measure(W, 11_000), 0.0);
    }

    #[test]
    fn unrecording_takes_a_value_back() {
        let mut r = Rate::new();
        r.record(W, 5_000.0, 100);
        r.record(W, 50_000.0, 200);
        r.record(W, -50_000.0, 200);
        assert_eq!(r.measure(W, 200), 5_000.0 / 10.1);
    }

    #[test]
    fn a_steady_client_under_its_bound_is_never_throttled() {
        // (At exactly the bound the span's end points both count and Kafka throttles a little.)
        let mut r = Rate::new();
        let mut throttled = 0;
        for t in (0..60_000).step_by(100) {
            throttled += r.record_and_throttle_ms(W, 1_000.0, 90.0, t);
        }
        assert_eq!(throttled, 0);
    }

    #[test]
    fn a_client_that_waits_its_throttle_times_averages_its_bound() {
        // What KIP-219 clients do: send, read the throttle time, wait it out, send again. The
        // first quota window's worth goes out at once (as in Kafka), so the average is over
        // a run long beside it.
        let mut r = Rate::new();
        let (mut t, mut sent) = (0i64, 0.0);
        while t < 300_000 {
            sent += 50_000.0;
            t += r.record_and_throttle_ms(W, 100_000.0, 50_000.0, t).max(1);
        }
        let achieved = sent / (t as f64 / 1000.0);
        assert!(
            (achieved - 100_000.0).abs() < 10_000.0,
            "achieved {achieved} B/s"
        );
    }

    #[test]
    fn a_simple_rate_measures_a_first_burst_over_one_window() {
        let mut r = Rate::new();
        r.record(W, 4_000.0, 0);
        // One window of 1 s, not ten.
        assert_eq!(r.measure_simple(W, 0), 4_000.0);
        assert_eq!(r.measure_simple(W, 500), 4_000.0);
        // Past the first window, the time since the oldest window started.
        assert_eq!(r.measure_simple(W, 2_000), 2_000.0);
        r.record(W, 4_000.0, 2_000);
        assert_eq!(r.measure_simple(W, 4_000), 2_000.0);
        // Obsolete windows are forgotten, as by `measure`.
        assert_eq!(r.measure_simple(W, 20_000), 0.0);
        // The span is counted from the oldest window's start, wherever the clock is.
        let mut r = Rate::new();
        r.record(W, 4_000.0, 10_000);
        assert_eq!(r.measure_simple(W, 12_000), 2_000.0);
    }

    #[test]
    fn max_in_quota_window_is_samples_minus_one_windows_of_the_bound() {
        assert_eq!(W.max_in_quota_window(1_000.0), 10_000.0);
        assert_eq!(Windows::new(2, 500).max_in_quota_window(1_000.0), 500.0);
    }

    #[test]
    fn a_token_bucket_starts_full_and_refills_at_its_rate() {
        let w = Windows::new(11, 1_000);
        let mut b = TokenBucket::new();
        // 2 tokens/s, burst 22.
        assert_eq!(b.tokens(w, 2.0, 0), 22.0);
        b.record(w, 2.0, 30.0, 0);
        assert_eq!(b.tokens(w, 2.0, 0), -8.0);
        assert_eq!(b.throttle_ms(w, 2.0, 0), 4_000);
        assert_eq!(b.throttle_ms(w, 2.0, 4_000), 0);
        // Never above the burst.
        assert_eq!(b.tokens(w, 2.0, 1_000_000), 22.0);
    }
}
