//! Renders a `LIBOMPTARGET_PROFILE` trace as an SVG timeline (the README's picture):
//! `profile-svg TRACE.json OUT.svg`. One band per host thread, nested spans one row deeper
//! each, a colour per span kind, labels where they fit, a time axis in milliseconds.

use std::collections::BTreeMap;
use std::fmt::Write;
use tests::json::{self, Value};

struct Span {
    name: String,
    tid: i64,
    start: f64,
    end: f64,
    detail: String,
}

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 130.0;
const ROW: f64 = 20.0;
const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(output)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: profile-svg TRACE.json OUT.svg");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(input).unwrap_or_else(|e| panic!("{input}: {e}"));
    let document = json::parse(&text).unwrap_or_else(|e| panic!("{input}: {e}"));
    let events = document
        .get("traceEvents")
        .and_then(Value::as_list)
        .expect("a traceEvents list");
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    let mut spans = Vec::new();
    for e in events {
        let number = |k: &str| e.get(k).and_then(Value::as_f64);
        match e.get("ph").and_then(Value::as_str) {
            Some("M") if e.get("name").and_then(Value::as_str) == Some("thread_name") => {
                if let (Some(tid), Some(name)) = (
                    number("tid"),
                    e.get("args")
                        .and_then(|a| a.get("name"))
                        .and_then(Value::as_str),
                ) {
                    names.insert(tid as i64, name.to_owned());
                }
            }
            Some("X") => {
                let (Some(ts), Some(dur), Some(tid)) = (number("ts"), number("dur"), number("tid"))
                else {
                    continue;
                };
                let args = e.get("args");
                let arg = |k: &str| args.and_then(|a| a.get(k));
                let mut detail = String::new();
                if let Some(loc) = arg("location").and_then(Value::as_str) {
                    let _ = write!(detail, " {}", loc.rsplit('/').next().unwrap_or(loc));
                }
                if let Some(d) = arg("device").and_then(Value::as_f64) {
                    let _ = write!(detail, " dev {d}");
                }
                if let Some(b) = arg("bytes").and_then(Value::as_f64) {
                    if b < 1024.0 {
                        let _ = write!(detail, " {b} B");
                    } else {
                        let _ = write!(detail, " {:.0} KiB", b / 1024.0);
                    }
                }
                if let Some(plugin) = arg("plugin").and_then(Value::as_str) {
                    let _ = write!(detail, " {plugin}");
                }
                spans.push(Span {
                    name: e
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned(),
                    tid: tid as i64,
                    start: ts,
                    end: ts + dur,
                    detail,
                });
            }
            _ => {}
        }
    }
    assert!(!spans.is_empty(), "no spans in {input}");
    let t0 = spans.iter().map(|s| s.start).fold(f64::MAX, f64::min);
    let t1 = spans.iter().map(|s| s.end).fold(f64::MIN, f64::max);
    let scale = (WIDTH - LEFT - 10.0) / (t1 - t0).max(1.0);
    // Rows: per thread, each span one row below the spans that hold it.
    let mut by_thread: BTreeMap<i64, Vec<&Span>> = BTreeMap::new();
    for s in &spans {
        by_thread.entry(s.tid).or_default().push(s);
    }
    let kinds: Vec<String> = {
        let mut k: Vec<String> = spans.iter().map(|s| s.name.clone()).collect();
        k.sort();
        k.dedup();
        k
    };
    let colour =
        |name: &str| PALETTE[kinds.iter().position(|k| k == name).unwrap_or(0) % PALETTE.len()];
    let mut body = String::new();
    let mut y = 40.0;
    for (tid, list) in &mut by_thread {
        list.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        let depth_of = |s: &Span, list: &[&Span]| {
            list.iter()
                .filter(|o| {
                    !std::ptr::eq(**o, s)
                        && o.start <= s.start
                        && s.end <= o.end
                        && (o.end - o.start) > (s.end - s.start)
                })
                .count()
        };
        let rows = list.iter().map(|s| depth_of(s, list)).max().unwrap_or(0) + 1;
        let label = names
            .get(tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"));
        let _ = writeln!(
            body,
            r##"<text x="6" y="{:.1}" font-size="12" fill="#333">{}</text>"##,
            y + 14.0,
            escape(&label)
        );
        for s in list.iter() {
            let depth = depth_of(s, list) as f64;
            let x = LEFT + (s.start - t0) * scale;
            let w = ((s.end - s.start) * scale).max(1.0);
            let ry = y + depth * ROW;
            let _ = writeln!(
                body,
                r##"<rect x="{x:.1}" y="{ry:.1}" width="{w:.1}" height="{:.1}" fill="{}" stroke="#fff" stroke-width="0.5"><title>{}{} ({:.1} us)</title></rect>"##,
                ROW - 2.0,
                colour(&s.name),
                escape(&s.name),
                escape(&s.detail),
                s.end - s.start
            );
            let text = format!("{}{}", s.name, s.detail);
            if w > 7.0 * text.len() as f64 * 0.8 {
                let _ = writeln!(
                    body,
                    r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#fff">{}</text>"##,
                    x + 3.0,
                    ry + 13.0,
                    escape(&text)
                );
            }
        }
        y += rows as f64 * ROW + 12.0;
    }
    // Time axis.
    let total_ms = (t1 - t0) / 1000.0;
    let step = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0,
    ]
    .into_iter()
    .find(|s| total_ms / s <= 10.0)
    .unwrap_or(1000.0);
    let mut axis = String::new();
    let mut t = 0.0;
    while t <= total_ms + 1e-9 {
        let x = LEFT + t * 1000.0 * scale;
        let _ = writeln!(
            axis,
            r##"<line x1="{x:.1}" y1="28" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="22" font-size="11" fill="#555">{t} ms</text>"##,
            y
        );
        t += step;
    }
    let mut legend = String::new();
    let mut lx = LEFT;
    for k in &kinds {
        let _ = writeln!(
            legend,
            r##"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#333">{}</text>"##,
            y + 6.0,
            colour(k),
            lx + 16.0,
            y + 16.0,
            escape(k)
        );
        lx += 30.0 + 7.0 * k.len() as f64;
    }
    let height = y + 30.0;
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" font-family="sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
{axis}{body}{legend}</svg>
"##
    );
    std::fs::write(output, svg).unwrap_or_else(|e| panic!("{output}: {e}"));
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
