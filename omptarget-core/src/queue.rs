//! The queue of one construct: every transfer and launch of a `target` or `target data`
//! construct goes on it, and it is synchronised once at the end (as LLVM's `AsyncInfoTy`). Work
//! that must wait for completion (freeing device memory, restoring host pointers overwritten by
//! a copy back) is deferred until then. The plugin queue is taken on the first work submitted:
//! a construct that submits nothing (a `target exit data` that only releases) neither takes nor
//! synchronises one.

use crate::abi::source_location::VarName;
use crate::device::Device;
use crate::error::Result;
use crate::mapping::{Changed, Mapping, MappingKey, TransferEvent};
use crate::observe::info;
use plugin_api::QueueHandle;
use smallvec::SmallVec;
use std::sync::LazyLock;

/// Mappings a construct ended: (host start, whether it may remove them). Inline, as the lists
/// below: constructs touch a few mappings, and the hot path allocates nothing.
type Ended = SmallVec<[(MappingKey, bool); 4]>;

pub(crate) struct ConstructQueue<'d> {
    pub device: &'d Device,
    /// `requires unified_shared_memory`: unmapped data is used in place.
    pub unified_shared_memory: bool,
    /// The plugin queue, once work was submitted.
    handle: Option<QueueHandle>,
    /// Host buffers the queued copies read from; they must live until synchronisation. Boxed
    /// so that their addresses stay fixed when the vector grows.
    #[allow(clippy::vec_box)]
    staged: Vec<Box<usize>>,
    staged_bytes: Vec<Box<[u8]>>,
    host_writes: SmallVec<[(usize, usize); 2]>,
    /// Device allocations to free, with the size each was asked for.
    frees: SmallVec<[(usize, u64); 2]>,
    /// Host ranges of removed mappings to unlock once the work that copies them is done.
    unlocks: SmallVec<[usize; 2]>,
    /// Mappings this construct ended (host start, whether it may remove them), released once
    /// its work has completed.
    ended: Ended,
    /// A mapping the construct's last argument removed already (see `data_ops::end`), reported
    /// after the others.
    removed: Option<Mapping>,
    /// Host starts of the mappings this construct created: data mapped into them (struct
    /// members) is new to the device too.
    created: SmallVec<[usize; 4]>,
    /// Device address each argument (by index) was placed at on entry, for the kernel's
    /// arguments: they need not be looked up again.
    placed: SmallVec<[(usize, usize); 4]>,
    finished: bool,
    /// A query found the queued work completed (which, by the plugin contract, is what a
    /// synchronisation would have found): finishing need not synchronise.
    work_done: bool,
}

impl<'d> ConstructQueue<'d> {
    pub(crate) fn new(device: &'d Device) -> Self {
        ConstructQueue {
            device,
            unified_shared_memory: device.maps_in_place(),
            handle: None,
            work_done: false,
            staged: Vec::new(),
            staged_bytes: Vec::new(),
            host_writes: SmallVec::new(),
            frees: SmallVec::new(),
            unlocks: SmallVec::new(),
            ended: Ended::new(),
            removed: None,
            created: SmallVec::new(),
            placed: SmallVec::new(),
            finished: false,
        }
    }

    /// The plugin queue, taken now if no work was submitted yet; for calls this type does not
    /// wrap.
    ///
    /// A device whose queues complete work on submission gets `QueueHandle::SYNC`, which
    /// every plugin runs synchronously: the same promise, without creating and releasing a
    /// queue per construct (two plugin calls).
    pub(crate) fn handle(&mut self) -> Result<QueueHandle> {
        if let Some(handle) = self.handle {
            return Ok(handle);
        }
        let handle = if self.device.queues_complete_on_submission() {
            QueueHandle::SYNC
        } else {
            self.device.plugin.create_queue(self.device.local)?
        };
        self.handle = Some(handle);
        Ok(handle)
    }

    /// # Safety
    /// `host_src` must be readable for `size` bytes until this construct's work is complete.
    pub(crate) unsafe fn copy_to_device(
        &mut self,
        device_dst: usize,
        host_src: usize,
        size: u64,
    ) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.copy_to_device_named(device_dst, host_src, size, None) }
    }

    /// As `copy_to_device`, naming the variable for `LIBOMPTARGET_INFO` when the source is a
    /// staging buffer rather than the mapped host data.
    ///
    /// # Safety
    /// As [`Self::copy_to_device`].
    pub(crate) unsafe fn copy_to_device_named(
        &mut self,
        device_dst: usize,
        host_src: usize,
        size: u64,
        name: Option<VarName>,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        if info::enabled(info::DATA_TRANSFER) {
            self.print_copy(true, host_src, device_dst, size, name);
        }
        self.submit("H2D", Some(size), |device, queue| {
            // SAFETY: the caller's promise; the construct's work completes before it returns.
            unsafe { device.copy_to_device(device_dst, host_src, size, queue) }
        })
    }

    /// # Safety
    /// `host_dst` must be writable for `size` bytes, and not otherwise used, until this
    /// construct's work is complete.
    pub(crate) unsafe fn copy_from_device(
        &mut self,
        host_dst: usize,
        device_src: usize,
        size: u64,
    ) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.copy_from_device_named(host_dst, device_src, size, None) }
    }

    /// With `name` given the mapping table is not consulted, so callers holding its lock may
    /// use it.
    ///
    /// # Safety
    /// As [`Self::copy_from_device`].
    pub(crate) unsafe fn copy_from_device_named(
        &mut self,
        host_dst: usize,
        device_src: usize,
        size: u64,
        name: Option<VarName>,
    ) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        if info::enabled(info::DATA_TRANSFER) {
            self.print_copy(false, host_dst, device_src, size, name);
        }
        self.submit("D2H", Some(size), |device, queue| {
            // SAFETY: the caller's promise; the construct's work completes before it returns.
            unsafe { device.copy_from_device(host_dst, device_src, size, queue) }
        })
    }

    /// LLVM's data-transfer information line, naming the mapped variable when there is one.
    fn print_copy(
        &self,
        to_device: bool,
        host: usize,
        device: usize,
        size: u64,
        name: Option<VarName>,
    ) {
        let name = name.unwrap_or_else(|| {
            let mut table = self.device.mapping.view(host, size, host);
            table.find(host, size).map_or(VarName::UNKNOWN, |m| m.name)
        });
        info::copy(self.device.id, to_device, host, device, size, name);
    }

    /// Sends a buffer the runtime built (packed firstprivates); it lives until synchronisation.
    pub(crate) fn copy_bytes_to_device(&mut self, device_dst: usize, bytes: Vec<u8>) -> Result<()> {
        let staged = bytes.into_boxed_slice();
        let (src, len) = (staged.as_ptr() as usize, staged.len() as u64);
        self.staged_bytes.push(staged);
        // SAFETY: the staged bytes are kept until the construct's work is complete.
        unsafe { self.copy_to_device(device_dst, src, len) }
    }

    /// Writes one pointer-sized value to device memory; `name` is the variable it belongs to
    /// (for `LIBOMPTARGET_INFO`).
    pub(crate) fn write_device_word(
        &mut self,
        device_dst: usize,
        value: usize,
        name: VarName,
    ) -> Result<()> {
        let staged = Box::new(value);
        let src = &*staged as *const usize as usize;
        self.staged.push(staged);
        // SAFETY: the staged word is kept until the construct's work is complete.
        unsafe {
            self.copy_to_device_named(
                device_dst,
                src,
                std::mem::size_of::<usize>() as u64,
                Some(name),
            )
        }
    }

    /// Writes a pointer-sized value to host memory once the queue has completed.
    pub(crate) fn write_host_word_after_sync(&mut self, host_dst: usize, value: usize) {
        self.host_writes.push((host_dst, value));
    }

    #[inline]
    pub(crate) fn note_created(&mut self, host_begin: usize) {
        self.created.push(host_begin);
    }

    /// After work on a mapping was queued: an event marking its end, for constructs on other
    /// queues to wait for. None when nothing was queued, when the device's queues complete work
    /// on submission (plugin ABI 1.4; the host plugin), or when `LIBOMPTARGET_MAP_FORCE_ATOMIC`
    /// is off. Recorded without asking the queue first whether it is done: the question costs
    /// a driver call too, and the answer is mostly "not yet" on a GPU. `current` is the
    /// mapping's event, recorded again rather than replaced.
    #[inline]
    pub(crate) fn transfer_event(
        &mut self,
        current: Option<TransferEvent>,
    ) -> Result<Option<TransferEvent>> {
        if self.device.queues_complete_on_submission() {
            return Ok(None);
        }
        self.record_transfer_event(current)
    }

    fn record_transfer_event(
        &mut self,
        current: Option<TransferEvent>,
    ) -> Result<Option<TransferEvent>> {
        static ENABLED: LazyLock<bool> = LazyLock::new(crate::config::map_force_atomic);
        let Some(queue) = self.handle else {
            return Ok(None);
        };
        if !*ENABLED {
            return Ok(None);
        }
        let (plugin, local) = (&self.device.plugin, self.device.local);
        let event = match current {
            Some(event) => event.handle,
            None => plugin
                .create_event(local)
                .map_err(|e| self.device.plugin_error("creating an event", e))?,
        };
        plugin
            .record_event(local, event, queue)
            .map_err(|e| self.device.plugin_error("recording an event", e))?;
        Ok(Some(TransferEvent {
            handle: event,
            queue,
        }))
    }

    /// Later work on this queue waits for a mapping's last transfer (see `transfer_event`),
    /// unless that transfer was queued on this same queue, which runs in order.
    #[inline]
    pub(crate) fn wait_for_transfer(&mut self, event: Option<TransferEvent>) -> Result<()> {
        match event {
            None => Ok(()),
            Some(event) => self.wait_for_event(event),
        }
    }

    fn wait_for_event(&mut self, event: TransferEvent) -> Result<()> {
        let queue = self.handle()?;
        if queue == event.queue {
            return Ok(());
        }
        self.device
            .plugin
            .wait_event(self.device.local, event.handle, queue)
            .map_err(|e| {
                self.device
                    .plugin_error("waiting for a mapping's transfer", e)
            })
    }

    pub(crate) fn note_placed(&mut self, arg_index: usize, device_begin: usize) {
        self.placed.push((arg_index, device_begin));
    }

    /// Where argument `arg_index` was placed on entry, if it was.
    pub(crate) fn placed_at(&self, arg_index: usize) -> Option<usize> {
        self.placed
            .iter()
            .find(|&&(i, _)| i == arg_index)
            .map(|&(_, address)| address)
    }

    pub(crate) fn created_here(&self, host_begin: usize) -> bool {
        self.created.contains(&host_begin)
    }

    /// Counts off an end of the mapping once the construct's work has completed, removing it
    /// if `may_remove` and nothing uses it any more.
    pub(crate) fn release_after_sync(&mut self, key: MappingKey, may_remove: bool) {
        self.ended.push((key, may_remove));
    }

    /// Reports the removal of a mapping (removed from the table already) and frees its memory
    /// once the construct's work has completed, after the mappings it released.
    pub(crate) fn report_removal_after_sync(&mut self, m: Mapping) {
        // Where the work is done already and no info line is written, the order of reports
        // is not seen (the memory is freed at the construct's end either way): reported now,
        // the mapping is not moved into the queue and out again.
        if self.device.queues_complete_on_submission() && !info::enabled(info::MAPPING_CHANGED) {
            return self.report_removal(m);
        }
        if let Some(earlier) = self.removed.replace(m) {
            // Not reached: only a construct's last argument removes at once.
            self.report_removal(earlier);
        }
    }

    /// Removes the mappings this construct ended that nothing references any more, unless
    /// another construct is still ending them (it will remove them).
    fn remove_released_mappings(&mut self) {
        if !self.ended.is_empty() {
            self.remove_ended_mappings();
        }
        if let Some(m) = self.removed.take() {
            self.report_removal(m);
        }
    }

    fn remove_ended_mappings(&mut self) {
        let ended = std::mem::take(&mut self.ended);
        let mapping = &self.device.mapping;
        // By reference: SmallVec's owning iterator costs more than the loop's body.
        for &(key, may_remove) in ended.iter() {
            let unused = |m: &Mapping| m.total_refs() == 0 && m.ends_in_flight == 0;
            let changed = mapping.view_of(key).change_or_remove(key, |m| {
                m.ends_in_flight = m.ends_in_flight.saturating_sub(1);
                may_remove && unused(m)
            });
            let removed = match changed {
                Changed::Missing | Changed::Kept => None,
                Changed::Removed(m) => Some(m),
                // Another construct may have mapped it again meanwhile: check again.
                Changed::NeedsWholeTable => {
                    match mapping.view_all().change_or_remove(key, |m| unused(m)) {
                        Changed::Removed(m) => Some(m),
                        _ => None,
                    }
                }
            };
            if let Some(m) = removed {
                self.report_removal(m);
            }
        }
    }

    /// What follows a mapping's removal: its events go, `LIBOMPTARGET_INFO` says so, and its
    /// memory is freed with the construct's other frees.
    fn report_removal(&mut self, m: Mapping) {
        self.device.discard_event(&m);
        if info::enabled(info::MAPPING_CHANGED) {
            info::line(
                self.device.id,
                format_args!(
                    "Removing map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, Name={}",
                    info::Ptr(m.host_begin),
                    info::Ptr(m.device_begin),
                    m.size(),
                    m.name.variable()
                ),
            );
        }
        if m.owns_device_memory {
            self.frees.push((m.device_alloc(), m.device_bytes()));
        }
        if m.host_locked {
            self.unlocks.push(m.host_begin);
        }
    }

    /// Submits one copy or launch (`op`, given the device and the queue) with its profile
    /// span (`bytes` for a transfer; on a device that works asynchronously the work itself may
    /// end later).
    #[inline]
    fn submit(
        &mut self,
        name: &'static str,
        bytes: Option<u64>,
        op: impl FnOnce(&'d Device, QueueHandle) -> Result<()>,
    ) -> Result<()> {
        let queue = self.handle()?;
        let _span = match crate::observe::profile::enabled() {
            true => self.work_span(name, bytes, queue),
            false => None,
        };
        let submitted = op(self.device, queue);
        if submitted.is_err() {
            self.submission_failed();
        }
        submitted
    }

    /// The profile span of work submitted to `queue`. Where the device has done the work when
    /// the submission returns (the host plugin), the span is on the queue's track too. Where
    /// the device times its work itself (plugin ABI 1.5), the submission waits for that
    /// timing, which comes when the queue has completed.
    #[cold]
    fn work_span(
        &mut self,
        name: &'static str,
        bytes: Option<u64>,
        queue: QueueHandle,
    ) -> Option<crate::observe::profile::Span> {
        let mut span = crate::observe::profile::begin(name)?;
        span.int("device", self.device.id as i64);
        if let Some(bytes) = bytes {
            span.int("bytes", bytes as i64);
        }
        if self.device.queues_complete_on_submission() {
            span.on_device_queue(self.device.id, queue.0);
        } else if self.device.work_timed() {
            crate::observe::profile::submitted(self.device.id, queue.0, name, bytes);
        }
        Some(span)
    }

    /// Records the device's own timing of the work this construct submitted (plugin ABI
    /// 1.5), once that work has completed (`completed`; else it is forgotten).
    #[cold]
    fn record_device_times(&self, completed: bool) {
        let Some(queue) = self.handle else { return };
        let submissions = crate::observe::profile::take_submissions(self.device.id, queue.0);
        if !completed || submissions.is_empty() {
            return;
        }
        match self.device.plugin.work_times(self.device.local, queue) {
            Ok(times) if times.len() == submissions.len() => {
                for (work, time) in submissions.into_iter().zip(times) {
                    crate::observe::profile::device_work(work, self.device.id, queue.0, time);
                }
            }
            Ok(times) => log::debug!(
                "LIBOMPTARGET_PROFILE: device {} timed {} operations of a construct that \
                 submitted {}; its device spans are left out",
                self.device.id,
                times.len(),
                submissions.len()
            ),
            Err(e) => log::debug!(
                "LIBOMPTARGET_PROFILE: device {} did not give its timing: {}",
                self.device.id,
                e.message
            ),
        }
    }

    /// Frees `device_ptr`, allocated for `size` bytes of the default kind, once the
    /// construct's work has completed.
    pub(crate) fn free_after_sync(&mut self, device_ptr: usize, size: u64) {
        self.frees.push((device_ptr, size));
    }

    pub(crate) fn launch(
        &mut self,
        kernel: plugin_api::KernelHandle,
        args: &[usize],
        config: &plugin_api::LaunchConfig,
    ) -> Result<()> {
        self.submit("kernel launch", None, |device, queue| {
            device
                .plugin
                .launch_kernel(device.local, kernel, args, config, queue)
                .map_err(|e| device.plugin_error("kernel launch", e))
        })
    }

    /// Launches a kernel-language (CUDA/HIP) kernel with its parameter buffer.
    pub(crate) fn launch_params(
        &mut self,
        kernel: plugin_api::KernelHandle,
        params: &[u8],
        config: &plugin_api::LaunchConfig,
    ) -> Result<()> {
        self.submit("kernel launch", None, |device, queue| {
            device
                .plugin
                .launch_kernel_params(device.local, kernel, params, config, queue)
                .unwrap_or_else(|| {
                    Err(plugin_api::PluginError::unsupported(format!(
                        "the plugin is built for ABI {}, which cannot launch kernel-language \
                         kernels",
                        device.plugin.abi_version
                    )))
                })
                .map_err(|e| device.plugin_error("kernel-language launch", e))
        })
    }

    /// A submission that failed is not timed by the plugin (plugin ABI 1.5): it is not waited
    /// for in the profile either.
    #[cold]
    fn submission_failed(&self) {
        if let (true, Some(queue)) = (self.device.work_timed(), self.handle) {
            crate::observe::profile::forget_last_submission(self.device.id, queue.0);
        }
    }

    /// Waits for everything queued, then runs the deferred work.
    #[inline]
    pub(crate) fn finish(mut self) -> Result<()> {
        self.complete()
    }

    /// As `finish`, for a queue the caller keeps (it is then finished: dropping it does
    /// nothing more).
    pub(crate) fn finish_in_place(&mut self) -> Result<()> {
        self.complete()
    }

    /// Whether the construct's queued work has completed (a device whose queues complete on
    /// submission, or no queue, always has).
    pub(crate) fn is_done(&mut self) -> Result<bool> {
        let done = match self.handle {
            Some(queue) if !self.device.queues_complete_on_submission() => self
                .device
                .plugin
                .query_queue(self.device.local, queue)
                .map_err(|e| self.device.plugin_error("querying a queue", e))?,
            _ => true,
        };
        self.work_done = done;
        Ok(done)
    }

    fn complete(&mut self) -> Result<()> {
        self.finished = true;
        // Nothing to wait for on a device whose queues complete work on submission, or when a
        // query found the work completed.
        let synced = match self.handle {
            Some(queue) if !self.device.queues_complete_on_submission() && !self.work_done => self
                .device
                .plugin
                .synchronize(self.device.local, queue)
                .map_err(|e| self.device.plugin_error("synchronisation", e)),
            _ => Ok(()),
        };
        if self.device.work_timed() {
            self.record_device_times(synced.is_ok());
        }
        if synced.is_ok() {
            for &(address, value) in &self.host_writes {
                // SAFETY: the address is a pointer field inside mapped host data whose copy back
                // just completed; the mapping rules recorded it as a live host location.
                unsafe { std::ptr::write_unaligned(address as *mut usize, value) };
            }
        }
        if let Some(queue) = self.handle.take().filter(|&q| q != QueueHandle::SYNC) {
            let _ = self.device.plugin.release_queue(self.device.local, queue);
        }
        self.remove_released_mappings();
        if !self.frees.is_empty() {
            // By reference, then cleared: SmallVec's owning iterator costs more than the loop.
            for &(ptr, size) in self.frees.iter() {
                if let Err(e) = self.device.free_allocation(ptr, size) {
                    log::warn!("{e}");
                }
            }
            self.frees.clear();
        }
        for host in self.unlocks.drain(..) {
            self.device.unlock_mapped_host_buffer(host);
        }
        self.staged.clear();
        self.staged_bytes.clear();
        synced
    }
}

impl Drop for ConstructQueue<'_> {
    fn drop(&mut self) {
        // A construct that failed part-way still waits for its queued work before buffers go.
        if !self.finished {
            if let Err(e) = self.complete() {
                log::warn!("{e}");
            }
        }
    }
}
