//! The code object's `NT_AMDGPU_METADATA` note (code object v3 and later): a MessagePack
//! map with `amdhsa.version`, `amdhsa.target` and `amdhsa.kernels`, read into
//! [`KernelMetadata`]. Keys this runtime does not use are ignored.

use super::msgpack::{self, Value};

/// Note type of the metadata note, whose owner is `"AMDGPU"`.
pub const NT_AMDGPU_METADATA: u32 = 32;
/// The note owner.
pub const NOTE_OWNER: &[u8] = b"AMDGPU";

/// One kernel argument (an entry of `.args`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelArgument {
    /// Byte offset in the kernel argument segment.
    pub offset: u32,
    pub size: u32,
    /// `global_buffer`, `by_value`, `hidden_block_count_x`, ...
    pub value_kind: String,
    /// The argument's name, where the compiler recorded one (OpenCL with arg info; OpenMP
    /// kernels have none).
    pub name: Option<String>,
}

impl KernelArgument {
    /// Whether the argument is one the runtime fills in (`hidden_*`), not the program.
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// A kernel's entry in `amdhsa.kernels`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelMetadata {
    /// The kernel's name (`.name`), the name of its function symbol.
    pub name: String,
    /// Its kernel descriptor symbol (`.symbol`), normally `<name>.kd`.
    pub symbol: String,
    pub kernarg_segment_size: u32,
    pub kernarg_segment_align: u32,
    /// LDS bytes the kernel uses, not counting dynamically allocated LDS.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item, not counting a dynamic stack.
    pub private_segment_fixed_size: u32,
    pub max_flat_workgroup_size: u32,
    pub wavefront_size: u32,
    pub sgpr_count: u32,
    pub vgpr_count: u32,
    /// Accumulation registers (gfx90a and gfx94x); 0 where the metadata has none.
    pub agpr_count: u32,
    pub sgpr_spill_count: u32,
    pub vgpr_spill_count: u32,
    /// Whether the kernel's stack size is unknown at compile time (recursion, calls through
    /// pointers): its scratch need is more than `private_segment_fixed_size`.
    pub uses_dynamic_stack: bool,
    /// `.reqd_workgroup_size`, where given.
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.workgroup_size_hint`, where given.
    pub workgroup_size_hint: Option<[u32; 3]>,
    pub args: Vec<KernelArgument>,
}

impl KernelMetadata {
    /// Where the arguments the program passes end: the end of the last argument that is
    /// not `hidden_*` (0 without any).
    pub fn explicit_args_size(&self) -> u32 {
        self.args
            .iter()
            .filter(|a| !a.is_hidden())
            .map(|a| a.offset.saturating_add(a.size))
            .max()
            .unwrap_or(0)
    }

    /// Offset of the first `hidden_*` argument: where the implicit arguments begin. `None`
    /// for a kernel without any.
    pub fn implicit_args_offset(&self) -> Option<u32> {
        self.args
            .iter()
            .filter(|a| a.is_hidden())
            .map(|a| a.offset)
            .min()
    }

    /// The first argument of this value kind (`hidden_block_count_x`, ...).
    pub fn arg(&self, value_kind: &str) -> Option<&KernelArgument> {
        self.args.iter().find(|a| a.value_kind == value_kind)
    }
}

/// The whole metadata map, as far as this runtime reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// `amdhsa.version`, `[major, minor]`.
    pub version: Option<(u32, u32)>,
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx90a:xnack+`.
    pub target: Option<String>,
    pub kernels: Vec<KernelMetadata>,
}

/// Reads the metadata from the note's descriptor bytes.
pub fn parse(desc: &[u8]) -> Result<Metadata, String> {
    let root = msgpack::decode(desc)?;
    if root.as_map().is_none() {
        return Err(format!("the metadata is {}, not a map", root.kind()));
    }
    let version =
        match root.get("amdhsa.version") {
            None => None,
            Some(v) => {
                let pair = v
                    .as_array()
                    .filter(|a| a.len() >= 2)
                    .and_then(|a| Some((to_u32(a[0].as_u64()?)?, to_u32(a[1].as_u64()?)?)));
                Some(pair.ok_or_else(|| {
                    format!("amdhsa.version is {}, not [major, minor]", describe(v))
                })?)
            }
        };
    let target = match root.get("amdhsa.target") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| format!("amdhsa.target is {}, not a string", v.kind()))?
                .to_owned(),
        ),
    };
    let kernels = match root.get("amdhsa.kernels") {
        None => Vec::new(),
        Some(v) => {
            let list = v
                .as_array()
                .ok_or_else(|| format!("amdhsa.kernels is {}, not an array", v.kind()))?;
            list.iter()
                .enumerate()
                .map(|(i, k)| kernel(k).map_err(|e| format!("kernel #{i} in amdhsa.kernels: {e}")))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(Metadata {
        version,
        target,
        kernels,
    })
}

fn describe(v: &Value) -> String {
    match v {
        Value::Array(items) => format!("an array of {} items", items.len()),
        other => other.kind().to_owned(),
    }
}

fn to_u32(v: u64) -> Option<u32> {
    u32::try_from(v).ok()
}

/// One kernel's map.
fn kernel(entry: &Value) -> Result<KernelMetadata, String> {
    if entry.as_map().is_none() {
        return Err(format!("{}, not a map", entry.kind()));
    }
    let name = string(entry, ".name")?;
    let with_name = |e: String| format!("{name}: {e}");
    let required = |key: &str| uint(entry, key)?.ok_or_else(|| format!("no {key}"));
    let optional = |key: &str| uint(entry, key).map(|v| v.unwrap_or(0));
    let args = match entry.get(".args") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .ok_or_else(|| format!(".args is {}, not an array", v.kind()))
            .map_err(with_name)?
            .iter()
            .enumerate()
            .map(|(i, a)| argument(a).map_err(|e| format!("{name}: argument #{i}: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let uses_dynamic_stack = match entry.get(".uses_dynamic_stack") {
        None => false,
        Some(v) => flag(v)
            .ok_or_else(|| format!(".uses_dynamic_stack is {}, not a boolean", v.kind()))
            .map_err(with_name)?,
    };
    let kernel = (|| {
        Ok::<_, String>(KernelMetadata {
            name: name.clone(),
            symbol: string(entry, ".symbol")?,
            kernarg_segment_size: required(".kernarg_segment_size")?,
            kernarg_segment_align: required(".kernarg_segment_align")?,
            group_segment_fixed_size: required(".group_segment_fixed_size")?,
            private_segment_fixed_size: required(".private_segment_fixed_size")?,
            max_flat_workgroup_size: required(".max_flat_workgroup_size")?,
            wavefront_size: required(".wavefront_size")?,
            sgpr_count: required(".sgpr_count")?,
            vgpr_count: required(".vgpr_count")?,
            agpr_count: optional(".agpr_count")?,
            sgpr_spill_count: optional(".sgpr_spill_count")?,
            vgpr_spill_count: optional(".vgpr_spill_count")?,
            uses_dynamic_stack,
            reqd_workgroup_size: triple(entry, ".reqd_workgroup_size")?,
            workgroup_size_hint: triple(entry, ".workgroup_size_hint")?,
            args,
        })
    })();
    kernel.map_err(with_name)
}

fn argument(entry: &Value) -> Result<KernelArgument, String> {
    if entry.as_map().is_none() {
        return Err(format!("{}, not a map", entry.kind()));
    }
    let required = |key: &str| uint(entry, key)?.ok_or_else(|| format!("no {key}"));
    let name = match entry.get(".name") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| format!(".name is {}, not a string", v.kind()))?
                .to_owned(),
        ),
    };
    Ok(KernelArgument {
        offset: required(".offset")?,
        size: required(".size")?,
        value_kind: string(entry, ".value_kind")?,
        name,
    })
}

/// A required string.
fn string(map: &Value, key: &str) -> Result<String, String> {
    match map.get(key) {
        None => Err(format!("no {key}")),
        Some(v) => v
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{key} is {}, not a string", v.kind())),
    }
}

/// An integer that fits 32 bits, if present.
fn uint(map: &Value, key: &str) -> Result<Option<u32>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::UInt(v)) => to_u32(*v)
            .map(Some)
            .ok_or_else(|| format!("{key} is {v}, more than 32 bits")),
        Some(v) => Err(format!("{key} is {}, not an unsigned integer", v.kind())),
    }
}

/// A boolean; 0 and 1 are taken as booleans too.
fn flag(v: &Value) -> Option<bool> {
    match *v {
        Value::Bool(b) => Some(b),
        Value::UInt(0) => Some(false),
        Value::UInt(1) => Some(true),
        _ => None,
    }
}

/// An optional `[x, y, z]`.
fn triple(map: &Value, key: &str) -> Result<Option<[u32; 3]>, String> {
    let Some(v) = map.get(key) else {
        return Ok(None);
    };
    let parsed = v.as_array().filter(|a| a.len() == 3).and_then(|a| {
        Some([
            to_u32(a[0].as_u64()?)?,
            to_u32(a[1].as_u64()?)?,
            to_u32(a[2].as_u64()?)?,
        ])
    });
    parsed
        .map(Some)
        .ok_or_else(|| format!("{key} is {}, not three unsigned integers", describe(v)))
}
