//! `nowait` target constructs that complete after their task returns, as in LLVM's runtime.
//!
//! libomp runs a `target nowait` region, or a `nowait` data construct, in a task. When the
//! construct's device work is still running at its end, the construct is left in the task's
//! asynchronous-handle slot and the task returns; libomp then runs the task again, calling
//! `__tgt_target_nowait_query`, until the work has completed and the construct's last steps
//! (copies back landed, mappings released, temporary buffers freed) are done. The helper thread meanwhile runs other tasks
//! instead of blocking in a device wait.

use crate::abi::source_location::Ident;
use crate::config::QueryBackoff;
use crate::queue::ConstructQueue;
use crate::runtime::Runtime;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::LazyLock;

/// A construct whose device work had not completed when its task returned.
struct Deferred {
    queue: ConstructQueue<'static>,
    /// The construct's source location (`Ident`, static data of the program), for errors.
    loc: usize,
    /// The construct's number in the `LIBOMPTARGET_PROFILE` trace (0 when profiling is off).
    construct: u64,
}

/// How polling backs off into waiting (`OMPTARGET_QUERY_COUNT_*`), read once: a thread with
/// many long regions in flight stops spinning on them.
static BACKOFF: LazyLock<QueryBackoff> = LazyLock::new(|| {
    let backoff = QueryBackoff::from_env();
    log::debug!("nowait queries back off as {backoff:?}");
    backoff
});

thread_local! {
    /// This thread's count of polls that found work still running (`QueryBackoff`).
    static PENDING_POLLS: Cell<u32> = const { Cell::new(0) };
}

/// Finishes the construct now, or, when libomp gave its task a handle slot and the work is
/// still running, leaves it there for [`query`].
///
/// # Safety
/// `slot` is libomp's handle slot of the calling task (from
/// [`crate::host_openmp::target_task_handle_slot`]).
/// The queue is borrowed, and moved out only when it is deferred: a construct's queue is a few
/// hundred bytes, and every construct would otherwise copy it.
pub(crate) unsafe fn finish_or_defer(
    queue: &mut ConstructQueue<'static>,
    slot: Option<*mut *mut c_void>,
    loc: *const Ident,
) -> crate::error::Result<()> {
    let Some(slot) = slot else {
        return queue.finish_in_place();
    };
    if queue.is_done()? {
        return queue.finish_in_place();
    }
    // A finished queue takes its place, so that the caller's drop does nothing.
    let mut finished = ConstructQueue::new(queue.device);
    finished.finish_in_place()?;
    let queue = std::mem::replace(queue, finished);
    // SAFETY: the caller's slot, as promised.
    unsafe { defer(queue, slot, loc) };
    Ok(())
}

/// Leaves the construct in `slot` for [`query`]; apart, so that constructs finished at once
/// do not pay for building the deferred record.
///
/// # Safety
/// As [`finish_or_defer`]'s `slot`.
#[inline(never)]
unsafe fn defer(queue: ConstructQueue<'static>, slot: *mut *mut c_void, loc: *const Ident) {
    log::debug!(
        "device {}: a nowait construct's work is still running; its task polls \
         __tgt_target_nowait_query",
        queue.device.id
    );
    let deferred = Box::new(Deferred {
        queue,
        loc: loc as usize,
        construct: crate::observe::profile::current_construct(),
    });
    // SAFETY: the caller's slot, empty (checked when it was taken); libomp hands it back to
    // `__tgt_target_nowait_query`.
    unsafe { *slot = Box::into_raw(deferred) as *mut c_void };
}

/// `__tgt_target_nowait_query`: finishes the construct in `slot` once its work has completed
/// (or waits for it, once this thread's polls found work running too often: [`BACKOFF`]),
/// emptying the slot; leaves it in place while the work runs.
///
/// # Safety
/// `slot` is null or a handle slot filled by [`finish_or_defer`] (or empty).
pub(crate) unsafe fn query(slot: *mut *mut c_void) {
    // SAFETY: the caller's promise.
    if slot.is_null() || unsafe { (*slot).is_null() } {
        return;
    }
    // SAFETY: a non-empty slot holds the Deferred that `finish_or_defer` put there.
    let pending = unsafe { &mut *(*slot as *mut Deferred) };
    let backoff = &*BACKOFF;
    let polls = PENDING_POLLS.with(Cell::get);
    let polled = (!backoff.waits(polls)).then(|| pending.queue.is_done());
    if matches!(polled, Some(Ok(false))) {
        PENDING_POLLS.with(|p| p.set(backoff.after_pending(polls)));
        return;
    }
    PENDING_POLLS.with(|p| p.set(backoff.after_finished(polls)));
    // SAFETY: as above; the slot is emptied so libomp stops polling it.
    let deferred = unsafe { Box::from_raw(*slot as *mut Deferred) };
    // SAFETY: the slot is libomp's, live for this call.
    unsafe { *slot = std::ptr::null_mut() };
    let loc = deferred.loc as *const Ident;
    let _span = crate::observe::profile::enabled()
        .then(|| completion_span(&deferred))
        .flatten();
    // A query that found the work failed has dropped it (the plugin reports a failure once):
    // its error is the construct's, whatever finishing then says.
    let finished = deferred.queue.finish();
    let outcome = match polled {
        Some(Err(e)) => Err(e),
        _ => finished,
    };
    if let Err(e) = outcome {
        Runtime::get().report_failure(&e, loc);
    }
}

/// The profile span of a deferred construct's completion: it carries the construct's number,
/// since the construct's own span ended when its task returned, before its device work did.
#[cold]
fn completion_span(deferred: &Deferred) -> Option<crate::observe::profile::Span> {
    let mut span = crate::observe::profile::begin("nowait completion")?;
    // SAFETY: `loc` is the compiler's ident_t of the construct, or null.
    span.text("location", unsafe {
        crate::abi::source_location::describe_or_unknown(deferred.loc as *const Ident)
    });
    span.int("device", deferred.queue.device.id as i64);
    span.int("construct", deferred.construct as i64);
    Some(span)
}
