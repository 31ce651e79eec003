//! A stream's copies: host to device, device to host and device to device, each after the
//! stream's earlier work. A host buffer is copied one of three ways: directly from the agent
//! address the user pinned it at, directly after locking it for the copy (large copies), or in
//! two steps through a pinned staging buffer, one step a host memcpy (small copies).

use super::chain::{ChainState, Stream, Work};
use super::host_copy::host_memcpy;
use super::shared::run_release;
use super::signal_pool::SignalRef;
use super::slot::{Release, Slot};
use super::timing::{monotonic_ns, HostStep, Step, StepClock};
use crate::hsa_interface::{Agent, HsaError, HsaInterface, HsaResult, Signal, SignalHandler};
use std::sync::{Arc, Weak};

/// A copy as `hsa_amd_memory_async_copy` takes it.
struct CopyOp {
    dst: usize,
    dst_agent: Agent,
    src: usize,
    src_agent: Agent,
    size: usize,
}

impl<H: HsaInterface> Stream<H> {
    /// Copies `size` bytes from host `src` to device `dst` after the stream's earlier work.
    /// `pinned_src` is the agent address of `src` when the user pinned it: one direct copy.
    /// Otherwise copies of at least `max_async_copy_bytes` lock `src` for the copy, and smaller
    /// ones go through a pinned staging buffer, filled by a host memcpy from `src` now or, behind
    /// pending work, later on a runtime thread.
    ///
    /// # Safety
    /// Unless `size` is 0, `src..src + size` must be host memory that stays readable, and that
    /// nothing but this stream's own later work writes, from the call until the stream has been
    /// synchronised ([`Stream::synchronize`] returned, [`Stream::query`] answered `true`, or the
    /// stream was dropped), also when this push returns an error: part of it may have been
    /// submitted already. `pinned_src`, if given, must be where this device's agents reach that
    /// memory (locked or allocated for them), and stay so until then. A push refused for a null
    /// address asks nothing.
    pub unsafe fn push_host_to_device(
        &self,
        dst: usize,
        src: usize,
        size: usize,
        pinned_src: Option<usize>,
    ) -> HsaResult<()> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.host_to_device(dst, src, size, pinned_src, Work::Counted) }
    }

    /// [`Stream::push_host_to_device`] of the plugin's own data (a launch environment): work
    /// the program did not ask for, never timed.
    ///
    /// # Safety
    /// As [`Stream::push_host_to_device`] (without a pinned address): `src` is read until the
    /// stream has been synchronised, possibly on another thread, so a borrow that ends with
    /// this call could not vouch for it.
    pub unsafe fn push_internal_host_to_device(
        &self,
        dst: usize,
        src: usize,
        size: usize,
    ) -> HsaResult<()> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.host_to_device(dst, src, size, None, Work::Internal) }
    }

    /// Both host-to-device pushes; `work` says whether the copy is timed.
    ///
    /// # Safety
    /// As [`Stream::push_host_to_device`].
    unsafe fn host_to_device(
        &self,
        dst: usize,
        src: usize,
        size: usize,
        pinned_src: Option<usize>,
        work: Work,
    ) -> HsaResult<()> {
        if size == 0 {
            return Ok(());
        }
        check_addresses(dst, pinned_src.unwrap_or(src))?;
        let mut state = self.state();
        self.check_failed(&state)?;
        self.activate(&mut state)?;
        let op = state.begin_op(work);
        let timed = op.is_some();
        // SAFETY: the caller's promise, passed on.
        let result =
            unsafe { self.host_to_device_locked(&mut state, dst, src, size, pinned_src, timed) };
        state.end_op(op, result.is_ok());
        result
    }

    /// [`Stream::push_host_to_device`] under the stream's lock.
    ///
    /// # Safety
    /// As [`Stream::push_host_to_device`].
    unsafe fn host_to_device_locked(
        &self,
        state: &mut ChainState<H>,
        dst: usize,
        src: usize,
        size: usize,
        pinned_src: Option<usize>,
        timed: bool,
    ) -> HsaResult<()> {
        let config = &self.shared.config;
        let (gpu, host) = (config.agent, config.host_agent);
        if let Some(pinned) = pinned_src {
            let op = CopyOp {
                dst,
                dst_agent: gpu,
                src: pinned,
                src_agent: host,
                size,
            };
            return self.push_copy(state, op, None, timed);
        }
        if size >= config.max_async_copy_bytes {
            let locked = self.hsa().lock_host_memory(src, size, &[gpu])?;
            let op = CopyOp {
                dst,
                dst_agent: gpu,
                src: locked,
                src_agent: host,
                size,
            };
            return self.push_copy(state, op, Some(Release::Unlock(src)), timed);
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { self.push_staged_to_device(state, dst, src, size, timed) }
    }

    /// Copies `size` bytes from device `src` to host `dst` after the stream's earlier work;
    /// `dst` holds the data once synchronize returns. The same three ways as
    /// [`Stream::push_host_to_device`]; staged copies land in the staging buffer and a handler
    /// copies them on to `dst`.
    ///
    /// # Safety
    /// Unless `size` is 0, `dst..dst + size` must be host memory that stays writable, and that
    /// nothing but this stream's own later work reads or writes, from the call until the stream
    /// has been synchronised ([`Stream::synchronize`] returned, [`Stream::query`] answered
    /// `true`, or the stream was dropped), also when this push returns an error: part of it may
    /// have been submitted already. `pinned_dst`, if given, must be where this device's agents
    /// reach that memory (locked or allocated for them), and stay so until then. A push refused
    /// for a null address asks nothing.
    pub unsafe fn push_device_to_host(
        &self,
        dst: usize,
        src: usize,
        size: usize,
        pinned_dst: Option<usize>,
    ) -> HsaResult<()> {
        if size == 0 {
            return Ok(());
        }
        check_addresses(pinned_dst.unwrap_or(dst), src)?;
        let mut state = self.state();
        self.check_failed(&state)?;
        self.activate(&mut state)?;
        let op = state.begin_op(Work::Counted);
        let timed = op.is_some();
        // SAFETY: the caller's promise, passed on.
        let result =
            unsafe { self.device_to_host_locked(&mut state, dst, src, size, pinned_dst, timed) };
        state.end_op(op, result.is_ok());
        result
    }

    /// [`Stream::push_device_to_host`] under the stream's lock.
    ///
    /// # Safety
    /// As [`Stream::push_device_to_host`].
    unsafe fn device_to_host_locked(
        &self,
        state: &mut ChainState<H>,
        dst: usize,
        src: usize,
        size: usize,
        pinned_dst: Option<usize>,
        timed: bool,
    ) -> HsaResult<()> {
        let config = &self.shared.config;
        let (gpu, host) = (config.agent, config.host_agent);
        if let Some(pinned) = pinned_dst {
            let op = CopyOp {
                dst: pinned,
                dst_agent: host,
                src,
                src_agent: gpu,
                size,
            };
            return self.push_copy(state, op, None, timed);
        }
        if size >= config.max_async_copy_bytes {
            let locked = self.hsa().lock_host_memory(dst, size, &[gpu])?;
            let op = CopyOp {
                dst: locked,
                dst_agent: host,
                src,
                src_agent: gpu,
                size,
            };
            return self.push_copy(state, op, Some(Release::Unlock(dst)), timed);
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { self.push_staged_to_host(state, dst, src, size, timed) }
    }

    /// Copies between device memory (of this or another GPU) after the stream's earlier work.
    /// Safe: the host never touches either range; the copy engine checks the addresses.
    pub fn push_device_to_device(
        &self,
        dst: usize,
        dst_agent: Agent,
        src: usize,
        src_agent: Agent,
        size: usize,
    ) -> HsaResult<()> {
        if size == 0 {
            return Ok(());
        }
        check_addresses(dst, src)?;
        let mut state = self.state();
        self.check_failed(&state)?;
        self.activate(&mut state)?;
        let copy = CopyOp {
            dst,
            dst_agent,
            src,
            src_agent,
            size,
        };
        let op = state.begin_op(Work::Counted);
        let result = self.push_copy(&mut state, copy, None, op.is_some());
        state.end_op(op, result.is_ok());
        result
    }

    /// Hands one copy to the runtime's copy engine, after `after`; the host touches neither
    /// range (both are device memory or host memory locked or allocated for the agents).
    fn submit_copy(
        &self,
        op: &CopyOp,
        after: Option<&SignalRef<H>>,
        completion: Signal,
    ) -> HsaResult<()> {
        let dep;
        let deps: &[Signal] = match after {
            Some(signal) => {
                dep = [signal.signal()];
                &dep
            }
            None => &[],
        };
        let hsa = self.hsa();
        let config = &self.shared.config;
        if let Some(engine) =
            self.shared
                .engines
                .choose(hsa, op.dst_agent, op.src_agent, config.host_agent)
        {
            match hsa.async_copy_on_engine(
                op.dst,
                op.dst_agent,
                op.src,
                op.src_agent,
                op.size,
                deps,
                completion,
                engine,
            ) {
                Ok(()) => return Ok(()),
                // Refused before anything was queued: the runtime's own choice instead.
                Err(err) => log::debug!("copy on SDMA engine {:#x} refused: {err}", engine.id),
            }
        }
        hsa.async_copy(
            op.dst,
            op.dst_agent,
            op.src,
            op.src_agent,
            op.size,
            deps,
            completion,
        )
    }

    /// A one-step copy in one slot; `release` runs when it completes, or now if it fails.
    fn push_copy(
        &self,
        state: &mut ChainState<H>,
        op: CopyOp,
        release: Option<Release>,
        timed: bool,
    ) -> HsaResult<()> {
        let done = match self.shared.signals.acquire() {
            Ok(signal) => signal,
            Err(err) => {
                self.release_now(release);
                return Err(err);
            }
        };
        let input = state.pending_input();
        if let Err(err) = self.submit_copy(&op, input.as_ref(), done.signal()) {
            done.retire_unused();
            self.release_now(release);
            return Err(err);
        }
        let slot = Slot::new(done, None)
            .with_deps(input, None)
            .with_release(release)
            .with_step(timed.then(|| Step::new(StepClock::Copy)));
        state.slots.push(slot);
        Ok(())
    }

    /// Host to device through a staging buffer: host memcpy into it, then the copy.
    ///
    /// # Safety
    /// As [`Stream::push_host_to_device`]: `src` is read by the memcpy, now or in a handler.
    unsafe fn push_staged_to_device(
        &self,
        state: &mut ChainState<H>,
        dst: usize,
        src: usize,
        size: usize,
        timed: bool,
    ) -> HsaResult<()> {
        let shared = &*self.shared;
        let buffer = shared.staging.acquire(size)?;
        let staged = buffer.ptr;
        let to_device = CopyOp {
            dst,
            dst_agent: shared.config.agent,
            src: staged,
            src_agent: shared.config.host_agent,
            size,
        };
        let Some(input) = state.pending_input() else {
            // Everything before is done, so the host step can run right away.
            let started = timed.then(monotonic_ns);
            // SAFETY: the buffer is ours until released and holds at least `size` bytes; our
            // caller promised `src` readable for `size` bytes.
            unsafe { host_memcpy(staged, src, size) };
            if let (Some(start), Some(timing)) = (started, state.timing.as_mut()) {
                timing.prelude = Some((start, monotonic_ns()));
            }
            return self.push_copy(state, to_device, Some(Release::Staging(buffer)), timed);
        };
        let (host_done, copied) = match self.acquire_two() {
            Ok(pair) => pair,
            Err(err) => {
                self.release_now(Some(Release::Staging(buffer)));
                return Err(err);
            }
        };
        let hsa = Arc::downgrade(&shared.hsa);
        let step = host_done.signal();
        let host_timer = timed.then(|| Arc::new(HostStep::default()));
        let timer = host_timer.clone();
        let handler: SignalHandler = Box::new(move || {
            let copy = || {
                // SAFETY: the buffer stays ours until the slot after this step completes,
                // which needs this handler to have run; our caller promised `src` valid until
                // the stream is synchronised, which waits for this step.
                unsafe { host_memcpy(staged, src, size) }
            };
            match &timer {
                Some(timer) => timer.time(copy),
                None => copy(),
            }
            complete_host_step(&hsa, step);
        });
        if let Err(err) = shared.hsa.on_signal_zero(input.signal(), handler) {
            host_done.retire_unused();
            copied.retire_unused();
            self.release_now(Some(Release::Staging(buffer)));
            return Err(err);
        }
        let host_step = Slot::new(host_done.clone(), None)
            .with_deps(Some(input), None)
            .with_step(host_timer.map(|timer| Step::new(StepClock::Host(timer))));
        if let Err(err) = self.submit_copy(&to_device, Some(&host_done), copied.signal()) {
            // The handler will still fill the buffer: keep its slot, and the buffer until then.
            let buffer = Some(Release::Staging(buffer));
            state.slots.push(host_step.with_release(buffer));
            copied.retire_unused();
            return Err(err);
        }
        state.slots.push(host_step);
        let copy_step = Slot::new(copied, None)
            .with_deps(Some(host_done), None)
            .with_release(Some(Release::Staging(buffer)))
            .with_step(timed.then(|| Step::new(StepClock::Copy)));
        state.slots.push(copy_step);
        Ok(())
    }

    /// Device to host through a staging buffer: the copy into it, then a handler's memcpy.
    ///
    /// # Safety
    /// As [`Stream::push_device_to_host`]: `dst` is written by the handler's memcpy.
    unsafe fn push_staged_to_host(
        &self,
        state: &mut ChainState<H>,
        dst: usize,
        src: usize,
        size: usize,
        timed: bool,
    ) -> HsaResult<()> {
        let shared = &*self.shared;
        let buffer = shared.staging.acquire(size)?;
        let staged = buffer.ptr;
        let (device_done, copied) = match self.acquire_two() {
            Ok(pair) => pair,
            Err(err) => {
                self.release_now(Some(Release::Staging(buffer)));
                return Err(err);
            }
        };
        let to_staging = CopyOp {
            dst: staged,
            dst_agent: shared.config.host_agent,
            src,
            src_agent: shared.config.agent,
            size,
        };
        let input = state.pending_input();
        if let Err(err) = self.submit_copy(&to_staging, input.as_ref(), device_done.signal()) {
            device_done.retire_unused();
            copied.retire_unused();
            self.release_now(Some(Release::Staging(buffer)));
            return Err(err);
        }
        let device_step = Slot::new(device_done.clone(), None)
            .with_deps(input, None)
            .with_step(timed.then(|| Step::new(StepClock::Copy)));
        let hsa = Arc::downgrade(&shared.hsa);
        let step = copied.signal();
        let host_timer = timed.then(|| Arc::new(HostStep::default()));
        let timer = host_timer.clone();
        let handler: SignalHandler = Box::new(move || {
            let copy = || {
                // SAFETY: the buffer stays ours until this step's slot completes, which needs
                // this handler to have run; our caller promised `dst` valid, and used by
                // nothing else, until the stream is synchronised, which waits for this step.
                unsafe { host_memcpy(dst, staged, size) }
            };
            match &timer {
                Some(timer) => timer.time(copy),
                None => copy(),
            }
            complete_host_step(&hsa, step);
        });
        if let Err(err) = shared.hsa.on_signal_zero(device_done.signal(), handler) {
            // The copy into the buffer is submitted: keep its slot, and the buffer until it
            // completed. `dst` is not written.
            let buffer = Some(Release::Staging(buffer));
            state.slots.push(device_step.with_release(buffer));
            copied.retire_unused();
            return Err(err);
        }
        state.slots.push(device_step);
        let host_step = Slot::new(copied, None)
            .with_deps(Some(device_done), None)
            .with_release(Some(Release::Staging(buffer)))
            .with_step(host_timer.map(|timer| Step::new(StepClock::Host(timer))));
        state.slots.push(host_step);
        Ok(())
    }

    fn acquire_two(&self) -> HsaResult<(SignalRef<H>, SignalRef<H>)> {
        let first = self.shared.signals.acquire()?;
        match self.shared.signals.acquire() {
            Ok(second) => Ok((first, second)),
            Err(err) => {
                first.retire_unused();
                Err(err)
            }
        }
    }

    /// Undoes what a push acquired for work that was never submitted.
    fn release_now(&self, release: Option<Release>) {
        if let Some(release) = release {
            if let Err(err) = run_release(&self.shared, release) {
                log::warn!("releasing resources of a failed push: {err}");
            }
        }
    }
}

/// Completes a host step of a two-step copy; the runtime may already be gone at teardown.
fn complete_host_step<H: HsaInterface>(hsa: &Weak<H>, signal: Signal) {
    if let Some(hsa) = hsa.upgrade() {
        hsa.signal_subtract(signal, 1);
    }
}

/// Refuses a copy naming a null address.
fn check_addresses(dst: usize, src: usize) -> HsaResult<()> {
    if dst == 0 || src == 0 {
        return Err(HsaError::new(
            HsaError::STATUS_INVALID_ARGUMENT,
            format!("copy with a null address (dst {dst:#x}, src {src:#x})"),
        ));
    }
    Ok(())
}
