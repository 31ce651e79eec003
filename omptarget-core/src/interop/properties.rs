//! The properties of an interop object (OpenMP 5.1 §3.12, `omp_interop_property_t`) and the
//! return codes of the routines that read them (`omp_interop_rc_t`).

use plugin_api::ForeignRuntime;
use std::ffi::CStr;

/// `omp_interop_rc_t`.
pub(crate) mod rc {
    pub(crate) const NO_VALUE: i32 = 1;
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const EMPTY: i32 = -1;
    pub(crate) const OUT_OF_RANGE: i32 = -2;
    pub(crate) const TYPE_INT: i32 = -3;
    pub(crate) const TYPE_PTR: i32 = -4;
    pub(crate) const TYPE_STR: i32 = -5;
    pub(crate) const OTHER: i32 = -6;
}

/// The spec's properties, `omp_ipr_fr_id` (-1) to `omp_ipr_targetsync` (-9). We define no
/// implementation-specific ones (ids 0 and up), so `omp_get_num_interop_properties` is 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Property {
    FrId,
    FrName,
    Vendor,
    VendorName,
    DeviceNum,
    Platform,
    Device,
    DeviceContext,
    TargetSync,
}

/// The C type a property has, which picks the routine that reads it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PropertyType {
    Int,
    Ptr,
    Str,
}

/// A property's value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Int(isize),
    Ptr(usize),
    Str(&'static CStr),
}

impl Property {
    const ALL: [Property; 9] = [
        Property::FrId,
        Property::FrName,
        Property::Vendor,
        Property::VendorName,
        Property::DeviceNum,
        Property::Platform,
        Property::Device,
        Property::DeviceContext,
        Property::TargetSync,
    ];

    /// The property of an `omp_interop_property_t` value; `None` is `omp_irc_out_of_range`.
    pub(crate) fn from_id(id: i32) -> Option<Property> {
        let index = usize::try_from(-(id as i64) - 1).ok()?;
        Self::ALL.get(index).copied()
    }

    pub(crate) fn value_type(self) -> PropertyType {
        match self {
            Property::FrId | Property::Vendor | Property::DeviceNum => PropertyType::Int,
            Property::FrName | Property::VendorName => PropertyType::Str,
            Property::Platform
            | Property::Device
            | Property::DeviceContext
            | Property::TargetSync => PropertyType::Ptr,
        }
    }

    /// The return code that tells a caller which routine reads this property.
    pub(crate) fn type_mismatch_code(self) -> i32 {
        match self.value_type() {
            PropertyType::Int => rc::TYPE_INT,
            PropertyType::Ptr => rc::TYPE_PTR,
            PropertyType::Str => rc::TYPE_STR,
        }
    }

    /// `omp_get_interop_name`: the spec's name of the property.
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            Property::FrId => c"fr_id",
            Property::FrName => c"fr_name",
            Property::Vendor => c"vendor",
            Property::VendorName => c"vendor_name",
            Property::DeviceNum => c"device_num",
            Property::Platform => c"platform",
            Property::Device => c"device",
            Property::DeviceContext => c"device_context",
            Property::TargetSync => c"targetsync",
        }
    }

    /// `omp_get_interop_type_desc`: the C type of the value, naming the foreign runtime's type
    /// for the native handles.
    pub(crate) fn type_desc(self, runtime: ForeignRuntime) -> &'static CStr {
        let cuda = runtime == ForeignRuntime::CUDA || runtime == ForeignRuntime::CUDA_DRIVER;
        match self {
            Property::FrId | Property::Vendor | Property::DeviceNum => c"intptr_t",
            Property::FrName | Property::VendorName => c"const char *",
            Property::Device if cuda => c"CUdevice (an int, as a pointer-sized value)",
            Property::DeviceContext if cuda => c"CUcontext",
            Property::TargetSync if cuda => c"CUstream (cudaStream_t)",
            Property::Device if runtime == ForeignRuntime::HSA => {
                c"hsa_agent_t (its handle, as a pointer-sized value)"
            }
            Property::TargetSync if runtime == ForeignRuntime::HSA => c"hsa_queue_t *",
            Property::Platform | Property::Device | Property::DeviceContext => c"void *",
            Property::TargetSync => c"void *",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_spec() {
        assert_eq!(Property::from_id(-1), Some(Property::FrId));
        assert_eq!(Property::from_id(-5), Some(Property::DeviceNum));
        assert_eq!(Property::from_id(-9), Some(Property::TargetSync));
        assert_eq!(Property::from_id(-10), None);
        assert_eq!(Property::from_id(0), None);
        assert_eq!(Property::from_id(i32::MIN), None);
        assert_eq!(Property::TargetSync.type_mismatch_code(), rc::TYPE_PTR);
        assert_eq!(Property::FrName.type_mismatch_code(), rc::TYPE_STR);
    }
}
