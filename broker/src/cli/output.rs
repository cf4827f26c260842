//! How the CLI shows results: aligned tables for people, JSON for scripts, progress lines
//! that appear only on a terminal, and the ISO 8601 timestamps that offsets are reset to.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// One JSON document (or one object per line for streams such as `consume`).
    Json,
}

/// Rows under headers, printed with every column as wide as its widest cell.
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: Vec<&str>| {
            let last = cells.len().saturating_sub(1);
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                out.push_str(c);
                if i < last {
                    out.extend(std::iter::repeat_n(' ', w - c.chars().count() + 2));
                }
            }
            out.push('\n');
        };
        line(self.headers.clone());
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect());
        }
        out
    }
}

/// Prints `value` as pretty JSON, or the table `render` builds.
pub fn emit(format: Format, value: &serde_json::Value, render: impl FnOnce() -> String) {
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(value).expect("JSON values always serialize") + "\n"
        }
        Format::Table => render(),
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// A progress line on stderr, redrawn at most every 200 ms, and only when stderr is a
/// terminal: pipes and logs stay clean.
pub struct Progress {
    enabled: bool,
    last: Instant,
    drawn: bool,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(200);

impl Progress {
    pub fn new() -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            last: Instant::now(),
            drawn: false,
        }
    }

    /// Redraws with `message` if enough time passed since the last draw.
    pub fn update(&mut self, message: impl FnOnce() -> String) {
        if !self.enabled || self.last.elapsed() < PROGRESS_EVERY {
            return;
        }
        self.last = Instant::now();
        self.drawn = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", message());
        let _ = err.flush();
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Parses an ISO 8601 / RFC 3339 date-time into milliseconds since the epoch:
/// `2024-05-01`, `2024-05-01T12:30`, `2024-05-01T12:30:15.250`, each optionally followed by
/// `Z` or an offset `+02:00` / `-0500`. Without a zone the time is UTC (Kafka's tool uses the
/// local zone; a CLI that runs in containers and CI is clearer with one fixed rule).
pub fn parse_datetime_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = match s.find(['T', ' ']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut d = date.split('-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: i64 = d.next()?.parse().ok()?;
    let day: i64 = d.next()?.parse().ok()?;
    if d.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Split the zone off the time.
    let (time, offset_minutes) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let zone = &rest[i + 1..];
        let sign = if rest.as_bytes()[i] == b'-' { -1 } else { 1 };
        let (h, m) = match zone.split_once(':') {
            Some((h, m)) => (h, m),
            None if zone.len() == 4 => zone.split_at(2),
            None => (zone, "0"),
        };
        let h: i64 = h.parse().ok()?;
        let m: i64 = m.parse().ok()?;
        if h > 23 || m > 59 {
            return None;
        }
        (&rest[..i], sign * (h * 60 + m))
    } else {
        (rest, 0)
    };
    let (mut hour, mut minute, mut second, mut millis) = (0i64, 0i64, 0i64, 0i64);
    if !time.is_empty() {
        let mut t = time.split(':');
        hour = t.next()?.parse().ok()?;
        minute = t.next()?.parse().ok()?;
        if let Some(sec) = t.next() {
            let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
            second = whole.parse().ok()?;
            if !frac.is_empty() {
                if !frac.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let digits: String = frac.chars().chain("000".chars()).take(3).collect();
                millis = digits.parse().ok()?;
            }
        }
        if t.next().is_some() || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds since the epoch as `2024-05-01T12:30:15.250Z` (for people; JSON keeps ms).
pub fn format_ms(ms: i64) -> String {
    if ms < 0 {
        return "-".into();
    }
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // Inverse of days_from_civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_forms_parse_to_epoch_millis() {
        assert_eq!(parse_datetime_ms("1970-01-01"), Some(0));
        assert_eq!(parse_datetime_ms("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(
            parse_datetime_ms("2024-02-29T12:30:15.25Z"),
            Some(1_709_209_815_250)
        );
        assert_eq!(
            parse_datetime_ms("2024-02-29T14:30:15.250+02:00"),
            Some(1_709_209_815_250)
        );
        assert_eq!(
            parse_datetime_ms("2024-02-29T07:30:15.250-0500"),
            Some(1_709_209_815_250)
        );
        assert_eq!(
            parse_datetime_ms("2024-02-29T12:30"),
            Some(1_709_209_800_000)
        );
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2024-01-01T25:00",
            "2024-01-01T1:2:3.x",
        ] {
            assert_eq!(parse_datetime_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_inverts_parsing() {
        for ms in [0, 1_709_209_815_250, 951_782_400_000] {
            assert_eq!(parse_datetime_ms(&format_ms(ms)), Some(ms));
        }
        assert_eq!(format_ms(1_709_209_815_250), "2024-02-29T12:30:15.250Z");
    }

    #[test]
    fn table_columns_align() {
        let mut t = Table::new(&["TOPIC", "P"]);
        t.row(vec!["orders".into(), "3".into()]);
        t.row(vec!["a".into(), "10".into()]);
        assert_eq!(t.render(), "TOPIC   P\norders  3\na       10\n");
    }
}
