//! AQL packets built as plain values, away from the queue ring they end up in.
//!
//! Every packet here has system-scope acquire and release fences (memory written by the host
//! or other agents before it is visible to it, and what it writes is visible to them once its
//! completion signal is decremented), and the barrier bit where its [`QueueOrder`] asks for it:
//! it then starts only after the packets before it in the queue completed. Without it,
//! independent work of streams sharing a queue runs concurrently. A barrier-AND packet with the
//! barrier bit completes only after both its dependencies and everything before it in the
//! queue: its completion signal then means "the queue has got this far".

use super::error::usage_error;
use crate::hsa_interface::{HsaError, KernelDispatch, QueueOrder, Signal};
use hsa_sys::*;

/// Dependency slots of a barrier-AND packet.
pub const MAX_BARRIER_DEPENDENCIES: usize = 5;

/// The 16-bit header of a packet of `packet_type` with system-scope fences, and the barrier
/// bit for [`QueueOrder::AfterEarlierPackets`].
pub fn header(packet_type: hsa_packet_type_t, order: QueueOrder) -> u16 {
    let barrier = (order == QueueOrder::AfterEarlierPackets) as u32;
    let header = (packet_type << HSA_PACKET_HEADER_TYPE)
        | (barrier << HSA_PACKET_HEADER_BARRIER)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    header as u16
}

/// The dimension count of a dispatch: the highest dimension whose grid or work-group size
/// exceeds 1 (at least 1).
pub fn dimensions(dispatch: &KernelDispatch) -> u16 {
    let used = |axis: usize| dispatch.grid_size[axis] > 1 || dispatch.workgroup_size[axis] > 1;
    if used(2) {
        3
    } else if used(1) {
        2
    } else {
        1
    }
}

/// A kernel dispatch packet for `dispatch`, decrementing `completion` when the kernel is done.
pub fn kernel_dispatch_packet(
    dispatch: &KernelDispatch,
    completion: Signal,
    order: QueueOrder,
) -> Result<hsa_kernel_dispatch_packet_t, HsaError> {
    if dispatch.workgroup_size.contains(&0) || dispatch.grid_size.contains(&0) {
        return Err(usage_error(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!(
                "kernel dispatch with an empty dimension: work-group {:?}, grid {:?}",
                dispatch.workgroup_size, dispatch.grid_size
            ),
        ));
    }
    if dispatch.kernel_object == 0 {
        return Err(usage_error(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "kernel dispatch without a kernel object",
        ));
    }
    let [workgroup_x, workgroup_y, workgroup_z] = dispatch.workgroup_size;
    let [grid_x, grid_y, grid_z] = dispatch.grid_size;
    Ok(hsa_kernel_dispatch_packet_t {
        header: header(HSA_PACKET_TYPE_KERNEL_DISPATCH, order),
        setup: dimensions(dispatch) << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
        workgroup_size_x: workgroup_x,
        workgroup_size_y: workgroup_y,
        workgroup_size_z: workgroup_z,
        reserved0: 0,
        grid_size_x: grid_x,
        grid_size_y: grid_y,
        grid_size_z: grid_z,
        private_segment_size: dispatch.private_segment_size,
        group_segment_size: dispatch.group_segment_size,
        kernel_object: dispatch.kernel_object,
        kernarg_address: dispatch.kernarg_address as u64,
        reserved2: 0,
        completion_signal: hsa_signal_t {
            handle: completion.0,
        },
    })
}

/// A barrier-AND packet that holds back the queue until every signal in `deps` is 0, then
/// decrements `completion` (`Signal(0)` for none).
pub fn barrier_and_packet(
    deps: &[Signal],
    completion: Signal,
    order: QueueOrder,
) -> Result<hsa_barrier_and_packet_t, HsaError> {
    if deps.len() > MAX_BARRIER_DEPENDENCIES {
        return Err(usage_error(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!(
                "a barrier-AND packet takes at most {MAX_BARRIER_DEPENDENCIES} dependencies, not {}",
                deps.len()
            ),
        ));
    }
    let mut dep_signal = [hsa_signal_t::default(); MAX_BARRIER_DEPENDENCIES];
    for (slot, dep) in dep_signal.iter_mut().zip(deps) {
        slot.handle = dep.0;
    }
    Ok(hsa_barrier_and_packet_t {
        header: header(HSA_PACKET_TYPE_BARRIER_AND, order),
        reserved0: 0,
        reserved1: 0,
        dep_signal,
        reserved2: 0,
        completion_signal: hsa_signal_t {
            handle: completion.0,
        },
    })
}

/// A packet as the sixteen 32-bit words it occupies in the ring. Word 0 (header and setup) is
/// what makes the packet valid: it is stored last, atomically (see `queue`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReadyPacket {
    pub words: [u32; 16],
}

impl ReadyPacket {
    /// Header in the low half, setup (or reserved) in the high half, as a little-endian store
    /// of the first four bytes lays them out.
    pub fn header_word(&self) -> u32 {
        self.words[0]
    }
}

impl From<hsa_kernel_dispatch_packet_t> for ReadyPacket {
    fn from(packet: hsa_kernel_dispatch_packet_t) -> ReadyPacket {
        // SAFETY: both types are 64 bytes (asserted in hsa-sys), the packet has no padding
        // (its fields tile the 64 bytes, checked by hsa-sys's layout tests), and every bit
        // pattern is a valid [u32; 16].
        let words =
            unsafe { std::mem::transmute::<hsa_kernel_dispatch_packet_t, [u32; 16]>(packet) };
        ReadyPacket { words }
    }
}

impl From<hsa_barrier_and_packet_t> for ReadyPacket {
    fn from(packet: hsa_barrier_and_packet_t) -> ReadyPacket {
        // SAFETY: as for the kernel dispatch packet: 64 bytes, no padding, any bits valid.
        let words = unsafe { std::mem::transmute::<hsa_barrier_and_packet_t, [u32; 16]>(packet) };
        ReadyPacket { words }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(workgroup_size: [u16; 3], grid_size: [u32; 3]) -> KernelDispatch {
        KernelDispatch {
            kernel_object: 0x7f00_0000_1000,
            kernarg_address: 0x7f00_0000_2000,
            workgroup_size,
            grid_size,
            group_segment_size: 1024,
            private_segment_size: 64,
        }
    }

    #[test]
    fn headers_carry_type_barrier_and_system_fences() {
        let kernel = header(
            HSA_PACKET_TYPE_KERNEL_DISPATCH,
            QueueOrder::AfterEarlierPackets,
        );
        assert_eq!(kernel & 0xff, 2);
        assert_eq!((kernel >> 8) & 1, 1);
        assert_eq!((kernel >> 9) & 3, 2);
        assert_eq!((kernel >> 11) & 3, 2);
        assert_eq!(kernel, 0x1502);
        assert_eq!(
            header(HSA_PACKET_TYPE_BARRIER_AND, QueueOrder::AfterEarlierPackets),
            0x1503
        );
        // Without the barrier bit: the same fences, bit 8 clear.
        assert_eq!(
            header(HSA_PACKET_TYPE_KERNEL_DISPATCH, QueueOrder::Unordered),
            0x1402
        );
        assert_eq!(
            header(HSA_PACKET_TYPE_BARRIER_AND, QueueOrder::Unordered),
            0x1403
        );
    }

    #[test]
    fn dimensions_count_up_to_the_last_used_axis() {
        assert_eq!(dimensions(&dispatch([64, 1, 1], [6400, 1, 1])), 1);
        assert_eq!(dimensions(&dispatch([1, 1, 1], [1, 1, 1])), 1);
        assert_eq!(dimensions(&dispatch([8, 8, 1], [64, 64, 1])), 2);
        assert_eq!(dimensions(&dispatch([64, 1, 1], [64, 2, 1])), 2);
        assert_eq!(dimensions(&dispatch([4, 4, 4], [16, 16, 16])), 3);
        assert_eq!(dimensions(&dispatch([64, 1, 1], [64, 1, 3])), 3);
    }

    #[test]
    fn a_kernel_packet_holds_the_dispatch() {
        let packet = kernel_dispatch_packet(
            &dispatch([8, 4, 2], [64, 32, 4]),
            Signal(0xabc),
            QueueOrder::AfterEarlierPackets,
        )
        .unwrap();
        assert_eq!(packet.header, 0x1502);
        assert_eq!(packet.setup, 3);
        assert_eq!(
            (
                packet.workgroup_size_x,
                packet.workgroup_size_y,
                packet.workgroup_size_z
            ),
            (8, 4, 2)
        );
        assert_eq!(
            (packet.grid_size_x, packet.grid_size_y, packet.grid_size_z),
            (64, 32, 4)
        );
        assert_eq!(packet.kernel_object, 0x7f00_0000_1000);
        assert_eq!(packet.kernarg_address, 0x7f00_0000_2000);
        assert_eq!(packet.group_segment_size, 1024);
        assert_eq!(packet.private_segment_size, 64);
        assert_eq!(packet.completion_signal.handle, 0xabc);
        assert_eq!((packet.reserved0, packet.reserved2), (0, 0));
    }

    #[test]
    fn a_one_dimensional_kernel_packet_has_setup_one() {
        let packet = kernel_dispatch_packet(
            &dispatch([256, 1, 1], [2560, 1, 1]),
            Signal(1),
            QueueOrder::AfterEarlierPackets,
        )
        .unwrap();
        assert_eq!(packet.setup, 1);
        let ready = ReadyPacket::from(packet);
        assert_eq!(ready.header_word(), 0x1502 | (1 << 16));
        // Word 1: work-group x and y; word 3: grid x.
        assert_eq!(ready.words[1], 256 | (1 << 16));
        assert_eq!(ready.words[3], 2560);
        // Words 14 and 15: the completion signal.
        assert_eq!((ready.words[14], ready.words[15]), (1, 0));
    }

    #[test]
    fn empty_dimensions_and_missing_kernels_are_refused() {
        let zero_grid = kernel_dispatch_packet(
            &dispatch([64, 1, 1], [0, 1, 1]),
            Signal(1),
            QueueOrder::Unordered,
        );
        assert_eq!(
            zero_grid.unwrap_err().status,
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        let zero_group = kernel_dispatch_packet(
            &dispatch([64, 0, 1], [64, 1, 1]),
            Signal(1),
            QueueOrder::Unordered,
        );
        assert!(zero_group.unwrap_err().message.contains("empty dimension"));
        let mut no_kernel = dispatch([64, 1, 1], [64, 1, 1]);
        no_kernel.kernel_object = 0;
        assert!(kernel_dispatch_packet(&no_kernel, Signal(1), QueueOrder::Unordered).is_err());
    }

    #[test]
    fn a_barrier_packet_holds_its_dependencies_and_zeroes_the_rest() {
        let packet = barrier_and_packet(
            &[Signal(11), Signal(22)],
            Signal(33),
            QueueOrder::AfterEarlierPackets,
        )
        .unwrap();
        assert_eq!(packet.header, 0x1503);
        let deps: Vec<u64> = packet.dep_signal.iter().map(|s| s.handle).collect();
        assert_eq!(deps, [11, 22, 0, 0, 0]);
        assert_eq!(packet.completion_signal.handle, 33);
        assert_eq!(
            (packet.reserved0, packet.reserved1, packet.reserved2),
            (0, 0, 0)
        );
        let ready = ReadyPacket::from(packet);
        assert_eq!(ready.header_word(), 0x1503);
        assert_eq!((ready.words[2], ready.words[4]), (11, 22));
    }

    #[test]
    fn a_barrier_takes_zero_to_five_dependencies() {
        let none = barrier_and_packet(&[], Signal(0), QueueOrder::Unordered).unwrap();
        assert!(none.dep_signal.iter().all(|s| s.handle == 0));
        assert_eq!(none.completion_signal.handle, 0);
        let five: Vec<Signal> = (1..=5).map(Signal).collect();
        let full = barrier_and_packet(&five, Signal(9), QueueOrder::Unordered).unwrap();
        assert_eq!(full.dep_signal[4].handle, 5);
        let six: Vec<Signal> = (1..=6).map(Signal).collect();
        let error = barrier_and_packet(&six, Signal(9), QueueOrder::Unordered).unwrap_err();
        assert_eq!(error.status, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        assert!(error.message.contains("at most 5"), "{}", error.message);
    }
}
