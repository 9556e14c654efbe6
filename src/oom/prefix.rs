//! Log prefixes in front of out-of-memory report lines (FORMATS.md §2.9.1).
//!
//! A report pasted from a log carries, on some or all of its lines, what the logging framework
//! put in front of the message. `content_start` skips any sequence of the prefixes below (each
//! followed by optional spaces) and then the line's leading spaces and tabs; what remains is
//! matched against the report grammar by its keys, never by its indentation.
//!
//! Recognised prefixes (`D` a digit; the reference parser `reference/oom.py` has the same list
//! as regular expressions):
//!
//! * ANSI colour codes, with or without their ESC byte (pastes often lose it), optionally
//!   preceded by a line number glued to them (`71[2m[36m`): `D* ESC? "[" [0-9;]* "m"`;
//! * Ray worker tags: `"(" ITEM {", " ITEM} ")"`, ITEM `NAME`, `[NAME " "] "pid=" D+`,
//!   `"ip=" ADDR` or `"node_id=" HEX`, at least one `pid=` or `ip=` (`(raylet, ip=10.0.0.1)`,
//!   `(pid=123, ip=…)`, `(TrainWorker pid=7, ip=…)`);
//! * torch.distributed's `[rankN]:`;
//! * glog / absl C++: `[IWEF]DDDD DD:DD:DD[.D+] +D+ FILE:D+"]"`;
//! * TensorFlow / absl-py: `DDDD-DD-DD DD:DD:DD[.D+]: [IWEF] +[D+ +]FILE:D+"]"`;
//! * Ray's own C++ log: `"[" DDDD-DD-DD DD:DD:DD[,.]D+ [IWEF] D+ D+ "]" FILE:D+":"`;
//! * Python logging's default format: `LEVEL ":" [NAME] ":"` (`ERROR:root:`, `WARNING:absl:`);
//! * a timestamp: `["["] DDDD-DD-DD[ T]DD:DD:DD[[.,]D+][Z|±DD[:]DD]["]"][":"]` (only the
//!   timestamp and a `:` are skipped: `- NAME - LEVEL -` style separators are not recognised);
//! * a bare time of day `DD:DD:DD[.D+]` and a lower-case `[level]` (Elixir's Logger:
//!   `13:21:27.502 [error] `);
//! * a Markdown quote `>` (a report quoted in a GitHub reply: `> BufferAssignment stats:`,
//!   nested `> >`).
//!
//! LEVEL is one of DEBUG INFO WARNING WARN ERROR CRITICAL FATAL. FILE is any run of bytes other
//! than space, `]` and `:`.

const LEVELS: [&[u8]; 7] = [b"DEBUG", b"INFO", b"WARNING", b"WARN", b"ERROR", b"CRITICAL", b"FATAL"];

fn digits(t: &[u8], i: usize) -> usize {
    t[i.min(t.len())..].iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Exactly `n` digits at `i`.
fn fixed(t: &[u8], i: usize, n: usize) -> Option<usize> {
    (t.len() >= i + n && t[i..i + n].iter().all(u8::is_ascii_digit)).then_some(i + n)
}

fn lit(t: &[u8], i: usize, s: &[u8]) -> Option<usize> {
    t.get(i..)?.starts_with(s).then_some(i + s.len())
}

/// `DD:DD:DD`
fn clock(t: &[u8], i: usize) -> Option<usize> {
    let i = fixed(t, i, 2)?;
    let i = lit(t, i, b":")?;
    let i = fixed(t, i, 2)?;
    let i = lit(t, i, b":")?;
    fixed(t, i, 2)
}

/// `DDDD-DD-DD`
fn date(t: &[u8], i: usize) -> Option<usize> {
    let i = fixed(t, i, 4)?;
    let i = lit(t, i, b"-")?;
    let i = fixed(t, i, 2)?;
    let i = lit(t, i, b"-")?;
    fixed(t, i, 2)
}

/// Optional `[sep]D+` fraction with one of `seps`.
fn fraction(t: &[u8], i: usize, seps: &[u8]) -> usize {
    if t.get(i).is_some_and(|b| seps.contains(b)) {
        let n = digits(t, i + 1);
        if n > 0 {
            return i + 1 + n;
        }
    }
    i
}

fn spaces1(t: &[u8], i: usize) -> Option<usize> {
    let n = t[i.min(t.len())..].iter().take_while(|&&b| b == b' ').count();
    (n > 0).then_some(i + n)
}

/// `FILE:D+` followed by `end`.
fn file_line(t: &[u8], i: usize, end: u8) -> Option<usize> {
    let n = t[i..].iter().take_while(|&&b| b != b' ' && b != b']' && b != b':').count();
    if n == 0 {
        return None;
    }
    let i = lit(t, i + n, b":")?;
    let d = digits(t, i);
    if d == 0 {
        return None;
    }
    (t.get(i + d) == Some(&end)).then_some(i + d + 1)
}

fn ansi(t: &[u8], i: usize) -> Option<usize> {
    let mut j = i + digits(t, i);
    if t.get(j) == Some(&0x1b) {
        j += 1;
    }
    let j = lit(t, j, b"[")?;
    let n = t[j..].iter().take_while(|&&b| b.is_ascii_digit() || b == b';').count();
    lit(t, j + n, b"m")
}

/// A Ray tag: `"(" ITEM {", " ITEM} ")"`, ITEM one of `NAME`, `NAME pid=D+`, `pid=D+`,
/// `ip=ADDR`, `node_id=HEX` (NAME, ADDR, HEX: no whitespace, comma or parenthesis), with at
/// least one `pid=` or `ip=` among them: `(pid=123)`, `(TrainWorker pid=7, ip=10.0.0.1)`,
/// `(raylet, ip=10.0.0.1)`.
fn ray_tag(t: &[u8], i: usize) -> Option<usize> {
    let i = lit(t, i, b"(")?;
    let close = i + t[i..].iter().position(|&b| b == b')')?;
    let inner = &t[i..close];
    if inner.is_empty() || inner.contains(&b'(') {
        return None;
    }
    let word = |w: &[u8]| !w.is_empty() && !w.iter().any(|&b| b.is_ascii_whitespace() || b == b',');
    let mut tagged = false;
    for (k, item) in inner.split(|&b| b == b',').enumerate() {
        // every item after the first is preceded by ", "
        let item = if k > 0 { item.strip_prefix(b" ")? } else { item };
        let (name, key) = match memchr::memchr(b' ', item) {
            Some(sp) => (Some(&item[..sp]), &item[sp + 1..]),
            None => (None, item),
        };
        if let Some(n) = name {
            if !word(n) {
                return None;
            }
        }
        if let Some(d) = key.strip_prefix(b"pid=") {
            if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
                return None;
            }
            tagged = true;
        } else if let Some(a) = key.strip_prefix(b"ip=") {
            if name.is_some() || !word(a) {
                return None;
            }
            tagged = true;
        } else if let Some(a) = key.strip_prefix(b"node_id=") {
            if name.is_some() || !word(a) {
                return None;
            }
        } else if name.is_some() || !word(key) || key.contains(&b'=') {
            return None;
        }
    }
    tagged.then_some(close + 1)
}

/// torch.distributed's `[rankN]:`.
fn rank_tag(t: &[u8], i: usize) -> Option<usize> {
    let j = lit(t, i, b"[rank")?;
    let d = digits(t, j);
    if d == 0 {
        return None;
    }
    lit(t, j + d, b"]:")
}

fn glog(t: &[u8], i: usize) -> Option<usize> {
    if !matches!(t.get(i), Some(b'I' | b'W' | b'E' | b'F')) {
        return None;
    }
    let j = fixed(t, i + 1, 4)?;
    let j = lit(t, j, b" ")?;
    let j = clock(t, j)?;
    let j = fraction(t, j, b".");
    let j = spaces1(t, j)?;
    let d = digits(t, j);
    if d == 0 {
        return None;
    }
    let j = lit(t, j + d, b" ")?;
    file_line(t, j, b']')
}

fn tf_log(t: &[u8], i: usize) -> Option<usize> {
    let j = date(t, i)?;
    let j = lit(t, j, b" ")?;
    let j = clock(t, j)?;
    let j = fraction(t, j, b".");
    let j = lit(t, j, b": ")?;
    if !matches!(t.get(j), Some(b'I' | b'W' | b'E' | b'F')) {
        return None;
    }
    let mut j = spaces1(t, j + 1)?;
    let d = digits(t, j);
    if d > 0 {
        if let Some(k) = spaces1(t, j + d) {
            j = k;
        }
    }
    file_line(t, j, b']')
}

fn ray_cpp(t: &[u8], i: usize) -> Option<usize> {
    let j = lit(t, i, b"[")?;
    let j = date(t, j)?;
    let j = lit(t, j, b" ")?;
    let j = clock(t, j)?;
    let j = fraction(t, j, b",.");
    let j = lit(t, j, b" ")?;
    if !matches!(t.get(j), Some(b'I' | b'W' | b'E' | b'F')) {
        return None;
    }
    let j = lit(t, j + 1, b" ")?;
    let d = digits(t, j);
    let j = lit(t, j + d, b" ")?;
    let d2 = digits(t, j);
    if d == 0 || d2 == 0 {
        return None;
    }
    let j = lit(t, j + d2, b"] ")?;
    file_line(t, j, b':')
}

fn py_logging(t: &[u8], i: usize) -> Option<usize> {
    let level = LEVELS.iter().find(|l| t[i..].starts_with(l))?;
    let j = lit(t, i + level.len(), b":")?;
    let n = t[j..].iter().take_while(|&&b| b != b':' && b != b' ').count();
    lit(t, j + n, b":")
}

fn timestamp(t: &[u8], i: usize) -> Option<usize> {
    let bracket = t.get(i) == Some(&b'[');
    let j = date(t, i + bracket as usize)?;
    if !matches!(t.get(j), Some(b' ' | b'T')) {
        return None;
    }
    let j = clock(t, j + 1)?;
    let mut j = fraction(t, j, b".,");
    if t.get(j) == Some(&b'Z') {
        j += 1;
    } else if matches!(t.get(j), Some(b'+' | b'-')) {
        if let Some(k) = fixed(t, j + 1, 2) {
            let k2 = if t.get(k) == Some(&b':') { k + 1 } else { k };
            if let Some(k3) = fixed(t, k2, 2) {
                j = k3;
            }
        }
    }
    if bracket {
        j = lit(t, j, b"]")?;
    }
    if t.get(j) == Some(&b':') {
        j += 1;
    }
    Some(j)
}

/// Elixir's Logger: `[LEVEL]` in lower case.
fn bracket_level(t: &[u8], i: usize) -> Option<usize> {
    let j = lit(t, i, b"[")?;
    let level = BRACKET_LEVELS.iter().find(|l| t[j..].starts_with(l))?;
    lit(t, j + level.len(), b"]")
}

const BRACKET_LEVELS: [&[u8]; 9] = [b"debug", b"info", b"notice", b"warning", b"warn", b"error", b"critical", b"alert", b"emergency"];

/// A bare time of day `DD:DD:DD[.D+]` (Elixir's Logger puts it before `[level]`).
fn time_of_day(t: &[u8], i: usize) -> Option<usize> {
    let j = clock(t, i)?;
    Some(fraction(t, j, b"."))
}

/// One prefix at `i`, if any: its end.
fn prefix_at(t: &[u8], i: usize) -> Option<usize> {
    ansi(t, i)
        .or_else(|| ray_tag(t, i))
        .or_else(|| rank_tag(t, i))
        .or_else(|| glog(t, i))
        .or_else(|| tf_log(t, i))
        .or_else(|| ray_cpp(t, i))
        .or_else(|| py_logging(t, i))
        .or_else(|| timestamp(t, i))
        .or_else(|| time_of_day(t, i))
        .or_else(|| bracket_level(t, i))
        .or_else(|| lit(t, i, b">"))
}

/// Where a line's content starts: after every log prefix and the spaces and tabs around them.
pub fn content_start(t: &[u8]) -> usize {
    let mut i = 0;
    while let Some(j) = prefix_at(t, i) {
        i = j;
        while i < t.len() && t[i] == b' ' {
            i += 1;
        }
    }
    while i < t.len() && (t[i] == b' ' || t[i] == b'\t') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::content_start;

    fn content(t: &str) -> &str {
        &t[content_start(t.as_bytes())..]
    }

    #[test]
    fn prefixes() {
        assert_eq!(content("E1122 12:34:56.789012  1234 file.cc:123] Peak buffers:"), "Peak buffers:");
        assert_eq!(content("(RayWorker pid=123) \tBuffer 1:"), "Buffer 1:");
        assert_eq!(content("\x1b[2m\x1b[36m(MeshHostWorker pid=489)\x1b[0m \t\tSize: 3.83GiB"), "Size: 3.83GiB");
        assert_eq!(content("[2m[36m(pid=489, ip=10.0.0.2)[0m Peak buffers:"), "Peak buffers:");
        assert_eq!(content("71[2m[36m(MeshHostWorker pid=489)[0m BufferAssignment stats:"), "BufferAssignment stats:");
        assert_eq!(
            content("2020-05-04 09:05:40.721128: E    1578 tensorflow/compiler/xla/xla_client/xla_util.cc:76]      Shape: bf16[512]"),
            "Shape: bf16[512]"
        );
        assert_eq!(content("2022-11-29 21:04:39.275246: E external/x/pjrt_stream_executor_client.cc:2153] Execution"), "Execution");
        assert_eq!(content("(MeshHostWorker pid=64024) [2022-10-31 13:00:11,531 E 64024 64024] logging.cc:361: x"), "x");
        assert_eq!(content("ERROR:root:Peak buffers:"), "Peak buffers:");
        assert_eq!(content("[2024-01-02T03:04:05.123Z] Peak buffers:"), "Peak buffers:");
        assert_eq!(content("2024-01-02 03:04:05,123: Peak buffers:"), "Peak buffers:");
        // Report text is never taken for a prefix.
        assert_eq!(content("  1. Size: 2.00G"), "1. Size: 2.00G");
        assert_eq!(content("        Buffer 1:"), "Buffer 1:");
        assert_eq!(content("(f32[1], s32[2]) tuple"), "(f32[1], s32[2]) tuple");
        assert_eq!(content("INFO something"), "INFO something");
        assert_eq!(content("13:21:27.502 [error] Execution"), "Execution");
        assert_eq!(content("(run_subprocess_ray pid=867) (VLLM pid=1857) Peak buffers:"), "Peak buffers:");
        assert_eq!(content("> > \tBuffer 1:"), "Buffer 1:");
        assert_eq!(content(">BufferAssignment stats:"), "BufferAssignment stats:");
        assert_eq!(content("(raylet, ip=10.0.0.1) Peak buffers:"), "Peak buffers:");
        assert_eq!(content("(pid=123, ip=10.0.0.1) \tBuffer 1:"), "Buffer 1:");
        assert_eq!(content("(TrainWorker pid=77, ip=10.0.0.1) [rank0]: Peak buffers:"), "Peak buffers:");
        assert_eq!(content("(raylet) Peak buffers:"), "(raylet) Peak buffers:");
        assert_eq!(content("(a, b) tuple"), "(a, b) tuple");
    }
}
