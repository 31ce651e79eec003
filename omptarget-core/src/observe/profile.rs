//! `LIBOMPTARGET_PROFILE=FILE`: a trace of the runtime's work in the Chrome trace-event format
//! (Perfetto and chrome://tracing open it), as LLVM's runtime writes one. Each host thread is a
//! track; its spans are the constructs (kind, the program's source location, device), the
//! transfers they make (direction, bytes, bandwidth), kernel launches, image loads and plugin
//! start-ups. Spans shorter than `LIBOMPTARGET_PROFILE_GRANULARITY` microseconds (LLVM's
//! default: 500) are left out.
//!
//! Devices get a track per queue. A device whose queues complete work on submission (the host
//! plugin) shows each submission there as it is. A plugin that times its queued work on the
//! device (plugin ABI 1.5: CUDA events, HSA profiling signals) gives the device's own span of
//! each copy and launch once the construct's work has completed; each device span is linked to
//! its submission by a flow and carries the number of its construct (`construct`), as does a
//! `nowait` region's deferred completion.
//!
//! Cheap when off: [`begin`] is one relaxed load and a branch. Bounded when on: each thread
//! keeps at most [`MAX_EVENTS_PER_THREAD`] spans in a buffer of its own (later ones are counted,
//! not kept). The file is written at exit and before a fatal error aborts the program; a child
//! process made by `fork` starts with empty buffers and writes `FILE.<pid>`.

use crate::json::json_string;
use crate::lock::lock;
use std::cell::RefCell;
use std::ffi::c_int;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Spans a thread keeps; beyond, spans are counted as dropped.
pub(crate) const MAX_EVENTS_PER_THREAD: usize = 1 << 20;

/// LLVM's default granularity, in microseconds.
const DEFAULT_GRANULARITY_US: u64 = 500;

static ENABLED: AtomicBool = AtomicBool::new(false);

struct Settings {
    file: String,
    granularity_ns: u64,
    start: Instant,
    /// `start` on `CLOCK_MONOTONIC` (the clock `Instant` reads on Linux, and the one plugins
    /// report device timings on).
    start_monotonic_ns: u64,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Every thread's buffer, for the writer.
static THREADS: Mutex<Vec<Arc<Mutex<ThreadLog>>>> = Mutex::new(Vec::new());
static NEXT_TID: AtomicU64 = AtomicU64::new(1);
/// (OpenMP device number, plugin, device name) of each device numbered, as `omptarget-info`
/// shows them.
static DEVICES: Mutex<Vec<(i32, String, String)>> = Mutex::new(Vec::new());

/// Records a device the runtime numbered, for the trace's `devices` list.
pub(crate) fn note_device(id: i32, plugin: &str, name: &str) {
    lock(&DEVICES).push((id, plugin.to_owned(), name.to_owned()));
}

struct Event {
    name: &'static str,
    start_ns: u64,
    duration_ns: u64,
    args: Vec<(&'static str, Arg)>,
    /// Also shown on this device queue's track, linked to the host span by a flow.
    device: Option<DeviceTrack>,
    /// A span of the device's own timing: shown only on the `device` track, linked by a flow
    /// from the host thread that submitted the work (its trace thread id, and when).
    submitted_by: Option<(u64, u64)>,
}

/// A device queue whose work ends when its submission returns (the host plugin's): the
/// submission's span is the device's own timing of the work.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct DeviceTrack {
    device: i32,
    queue: u64,
}

impl DeviceTrack {
    /// Device tracks have thread ids of their own, above any host thread's.
    fn tid(self) -> u64 {
        1_000_000 + (self.device.max(0) as u64) * 1024 + self.queue % 1024
    }
}

/// A span's argument: a number or a text.
pub(crate) enum Arg {
    Int(i64),
    Text(String),
}

struct ThreadLog {
    tid: u64,
    name: String,
    events: Vec<Event>,
    dropped: u64,
}

thread_local! {
    static LOG: RefCell<Option<Arc<Mutex<ThreadLog>>>> = const { RefCell::new(None) };
    /// The number of the construct this thread is in (see [`Span::construct`]).
    static CONSTRUCT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

static NEXT_CONSTRUCT: AtomicU64 = AtomicU64::new(1);

/// The number of the construct the calling thread is in (0: none, or profiling is off).
pub(crate) fn current_construct() -> u64 {
    CONSTRUCT.with(std::cell::Cell::get)
}

/// Reads the variables once, when the runtime starts; registers the exit and fork handlers.
pub(crate) fn init() {
    let Some(file) = std::env::var("LIBOMPTARGET_PROFILE")
        .ok()
        .filter(|f| !f.is_empty())
    else {
        return;
    };
    let granularity_us = std::env::var("LIBOMPTARGET_PROFILE_GRANULARITY")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_GRANULARITY_US);
    let settings = Settings {
        file,
        granularity_ns: granularity_us.saturating_mul(1000),
        start: Instant::now(),
        start_monotonic_ns: host_os::clock::host_clock_ns(),
    };
    if SETTINGS.set(settings).is_err() {
        return;
    }
    // SAFETY: registering plain C callbacks that take no arguments.
    unsafe {
        atexit(write_at_exit);
        pthread_atfork(None, None, Some(forget_in_child));
    }
    ENABLED.store(true, Ordering::Release);
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> c_int;
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
}

extern "C" fn write_at_exit() {
    let _ = std::panic::catch_unwind(flush);
}

/// The child of a `fork` keeps none of its parent's spans and writes a file of its own.
extern "C" fn forget_in_child() {
    let _ = std::panic::catch_unwind(|| {
        if let Ok(threads) = THREADS.try_lock() {
            for log in threads.iter() {
                if let Ok(mut log) = log.try_lock() {
                    log.events.clear();
                    log.dropped = 0;
                }
            }
        }
        CHILD.store(true, Ordering::Release);
    });
}

static CHILD: AtomicBool = AtomicBool::new(false);

/// Whether spans are recorded.
#[inline]
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A span being timed; recorded when dropped. One pointer, so that an `Option<Span>` that is
/// `None` (profiling off) costs a construct nothing but a test.
pub(crate) struct Span(Box<SpanData>);

struct SpanData {
    name: &'static str,
    start: Instant,
    args: Vec<(&'static str, Arg)>,
    device: Option<DeviceTrack>,
    /// A construct's span: the thread is in no construct once it ends.
    is_construct: bool,
}

/// Starts a span named `name` (a construct kind, "H2D", ...), or nothing when profiling is off.
#[inline]
pub(crate) fn begin(name: &'static str) -> Option<Span> {
    if !enabled() {
        return None;
    }
    Some(start(name))
}

#[cold]
fn start(name: &'static str) -> Span {
    Span(Box::new(SpanData {
        name,
        start: Instant::now(),
        args: Vec::new(),
        device: None,
        is_construct: false,
    }))
}

impl Span {
    pub(crate) fn arg(&mut self, key: &'static str, value: Arg) {
        self.0.args.push((key, value));
    }

    /// Shows the span on the track of `device`'s `queue` too: for work the device has done
    /// when its submission returns.
    pub(crate) fn on_device_queue(&mut self, device: i32, queue: u64) {
        self.0.device = Some(DeviceTrack { device, queue });
    }

    /// Marks the span as a construct: it gets a number (argument `construct`), which the
    /// device's spans of its work and its deferred completion carry too.
    pub(crate) fn construct(&mut self) {
        let id = NEXT_CONSTRUCT.fetch_add(1, Ordering::Relaxed);
        CONSTRUCT.with(|c| c.set(id));
        self.0.is_construct = true;
        self.int("construct", id as i64);
    }

    pub(crate) fn int(&mut self, key: &'static str, value: i64) {
        self.arg(key, Arg::Int(value));
    }

    pub(crate) fn text(&mut self, key: &'static str, value: impl Into<String>) {
        self.arg(key, Arg::Text(value.into()));
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if self.0.is_construct {
            CONSTRUCT.with(|c| c.set(0));
        }
        record(&mut self.0);
    }
}

#[cold]
fn record(span: &mut SpanData) {
    {
        let Some(settings) = SETTINGS.get() else {
            return;
        };
        let end = Instant::now();
        let duration_ns = end.duration_since(span.start).as_nanos() as u64;
        if duration_ns < settings.granularity_ns {
            return;
        }
        let start_ns = span.start.duration_since(settings.start).as_nanos() as u64;
        let mut args = std::mem::take(&mut span.args);
        // Transfers carry their bandwidth, from the bytes and the span's length.
        if let Some(bytes) = args.iter().find_map(|(k, v)| match (k, v) {
            (&"bytes", Arg::Int(n)) => Some(*n),
            _ => None,
        }) {
            let mb_per_s = bytes as f64 / (duration_ns.max(1) as f64 / 1e9) / 1e6;
            args.push(("MB/s", Arg::Int(mb_per_s as i64)));
        }
        keep(Event {
            name: span.name,
            start_ns,
            duration_ns,
            args,
            device: span.device,
            submitted_by: None,
        });
    }
}

/// Adds an event to the calling thread's buffer.
fn keep(event: Event) {
    let _ = LOG.try_with(|log| {
        let mut slot = log.borrow_mut();
        let log = slot.get_or_insert_with(register_thread);
        let mut log = lock(log);
        if log.events.len() < MAX_EVENTS_PER_THREAD {
            log.events.push(event);
        } else {
            log.dropped += 1;
        }
    });
}

/// The calling thread's track.
fn current_tid() -> u64 {
    LOG.try_with(|log| {
        let mut slot = log.borrow_mut();
        let log = slot.get_or_insert_with(register_thread);
        let tid = lock(log).tid;
        tid
    })
    .unwrap_or(0)
}

/// Work submitted to a device that times it itself (plugin ABI 1.5): what the host knew at
/// submission, until the device's timing arrives.
pub(crate) struct Submission {
    name: &'static str,
    bytes: Option<u64>,
    construct: u64,
    /// The submitting thread's track, and when (since the trace's start).
    tid: u64,
    at_ns: u64,
}

/// Work submitted to devices that time it themselves, by (device, queue), in order, until the
/// queue's work has completed and its construct asks for it.
#[allow(clippy::type_complexity)]
static SUBMITTED: Mutex<Option<std::collections::HashMap<(i32, u64), Vec<Submission>>>> =
    Mutex::new(None);

/// Notes work submitted now on the calling thread to `device`'s `queue` (`bytes` for a
/// transfer), until the device's timing of it arrives.
#[cold]
pub(crate) fn submitted(device: i32, queue: u64, name: &'static str, bytes: Option<u64>) {
    let Some(settings) = SETTINGS.get() else {
        return;
    };
    let work = Submission {
        name,
        bytes,
        construct: current_construct(),
        tid: current_tid(),
        at_ns: settings.start.elapsed().as_nanos() as u64,
    };
    lock(&SUBMITTED)
        .get_or_insert_with(Default::default)
        .entry((device, queue))
        .or_default()
        .push(work);
}

/// Forgets the last work noted for `device`'s `queue`: its submission failed.
#[cold]
pub(crate) fn forget_last_submission(device: i32, queue: u64) {
    if let Some(list) = lock(&SUBMITTED)
        .as_mut()
        .and_then(|map| map.get_mut(&(device, queue)))
    {
        list.pop();
    }
}

/// The work noted for `device`'s `queue` since the last call, in submission order.
#[cold]
pub(crate) fn take_submissions(device: i32, queue: u64) -> Vec<Submission> {
    lock(&SUBMITTED)
        .as_mut()
        .and_then(|map| map.remove(&(device, queue)))
        .unwrap_or_default()
}

/// Records the device's own span of `work`, on the track of `device`'s `queue`, linked by a
/// flow from its submission.
#[cold]
pub(crate) fn device_work(work: Submission, device: i32, queue: u64, time: plugin_api::WorkTime) {
    let Some(settings) = SETTINGS.get() else {
        return;
    };
    let duration_ns = time.end_ns.saturating_sub(time.start_ns);
    if duration_ns < settings.granularity_ns {
        return;
    }
    let mut args = vec![
        ("device", Arg::Int(device as i64)),
        ("construct", Arg::Int(work.construct as i64)),
    ];
    if let Some(bytes) = work.bytes {
        args.push(("bytes", Arg::Int(bytes as i64)));
        let mb_per_s = bytes as f64 / (duration_ns.max(1) as f64 / 1e9) / 1e6;
        args.push(("MB/s", Arg::Int(mb_per_s as i64)));
    }
    if time.uncertainty_ns > 0 {
        args.push(("clock uncertainty ns", Arg::Int(time.uncertainty_ns as i64)));
    }
    keep(Event {
        name: work.name,
        start_ns: time.start_ns.saturating_sub(settings.start_monotonic_ns),
        duration_ns,
        args,
        device: Some(DeviceTrack { device, queue }),
        submitted_by: Some((work.tid, work.at_ns)),
    });
}

fn register_thread() -> Arc<Mutex<ThreadLog>> {
    let current = std::thread::current();
    let tid = NEXT_TID.fetch_add(1, Ordering::Relaxed);
    let log = Arc::new(Mutex::new(ThreadLog {
        tid,
        name: current
            .name()
            .map_or_else(|| format!("host thread {tid}"), |n| n.to_owned()),
        events: Vec::new(),
        dropped: 0,
    }));
    lock(&THREADS).push(Arc::clone(&log));
    log
}

/// Writes the trace file now (at exit, or before a fatal error aborts the program).
pub(crate) fn flush() {
    let Some(settings) = SETTINGS.get() else {
        return;
    };
    let pid = std::process::id();
    let path = if CHILD.load(Ordering::Acquire) {
        format!("{}.{pid}", settings.file)
    } else {
        settings.file.clone()
    };
    let threads: Vec<Arc<Mutex<ThreadLog>>> = lock(&THREADS).clone();
    let mut tracks: Vec<DeviceTrack> = Vec::new();
    let mut flows = 0u64;
    let mut out = String::from("{\"traceEvents\":[\n");
    let mut first = true;
    let mut push = |line: String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&line);
    };
    push(format!(
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"args\":{{\"name\":\"omptarget\"}}}}"
    ));
    for log in &threads {
        let log = lock(log);
        push(format!(
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            log.tid,
            json_string(&log.name)
        ));
        for event in &log.events {
            let mut args = String::new();
            for (i, (key, value)) in event.args.iter().enumerate() {
                if i > 0 {
                    args.push(',');
                }
                args.push_str(&json_string(key));
                args.push(':');
                match value {
                    Arg::Int(n) => args.push_str(&n.to_string()),
                    Arg::Text(t) => args.push_str(&json_string(t)),
                }
            }
            let (ts, dur) = (
                event.start_ns as f64 / 1000.0,
                event.duration_ns as f64 / 1000.0,
            );
            if let (Some(track), Some((tid, at_ns))) = (event.device, event.submitted_by) {
                // The device's own span, and a flow from the submitting host thread.
                if !tracks.contains(&track) {
                    tracks.push(track);
                }
                flows += 1;
                let submitted = at_ns as f64 / 1000.0;
                push(format!(
                    "{{\"name\":{},\"cat\":\"device\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3},\"dur\":{dur:.3},\"args\":{{{args}}}}}",
                    json_string(event.name),
                    track.tid(),
                ));
                push(format!(
                    "{{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":{flows},\"pid\":{pid},\"tid\":{tid},\"ts\":{submitted:.3}}}"
                ));
                push(format!(
                    "{{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{flows},\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3}}}",
                    track.tid()
                ));
                continue;
            }
            push(format!(
                "{{\"name\":{},\"cat\":\"omptarget\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3},\"dur\":{dur:.3},\"args\":{{{args}}}}}",
                json_string(event.name),
                log.tid,
            ));
            if let Some(track) = event.device {
                if !tracks.contains(&track) {
                    tracks.push(track);
                }
                // The device's span, and a flow from the host span that submitted it.
                flows += 1;
                push(format!(
                    "{{\"name\":{},\"cat\":\"device\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3},\"dur\":{dur:.3},\"args\":{{{args}}}}}",
                    json_string(event.name),
                    track.tid(),
                ));
                push(format!(
                    "{{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":{flows},\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3}}}",
                    log.tid
                ));
                push(format!(
                    "{{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{flows},\"pid\":{pid},\"tid\":{},\"ts\":{ts:.3}}}",
                    track.tid()
                ));
            }
        }
        if log.dropped > 0 {
            push(format!(
                "{{\"name\":\"spans dropped\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{pid},\"tid\":{},\"ts\":0,\"args\":{{\"count\":{}}}}}",
                log.tid, log.dropped
            ));
        }
    }
    for track in &tracks {
        push(format!(
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":\"device {} queue {:#x}\"}}}}",
            track.tid(),
            track.device,
            track.queue
        ));
    }
    let devices: Vec<String> = lock(&DEVICES)
        .iter()
        .map(|(id, plugin, name)| {
            format!(
                "{{\"id\":{id},\"plugin\":{},\"name\":{}}}",
                json_string(plugin),
                json_string(name)
            )
        })
        .collect();
    out.push_str(&format!(
        "\n],\"displayTimeUnit\":\"ns\",\"devices\":[{}]}}\n",
        devices.join(",")
    ));
    match std::fs::File::create(&path).and_then(|mut f| f.write_all(out.as_bytes())) {
        Ok(()) => {}
        Err(e) => crate::observe::logging::message(&format!(
            "cannot write the LIBOMPTARGET_PROFILE trace to {path}: {e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_for_json() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn spans_are_free_when_off() {
        assert!(begin("target").is_none());
    }
}
