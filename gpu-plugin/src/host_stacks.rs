//! Host stacks for fault and allocation reports: captured where a plugin operation starts
//! (cheaply: symbols are resolved only when a report prints one), printed a frame a line from
//! the runtime's entry point down to `main`.
//!
//! The runtime's own frames say nothing to a user (and are stripped in the install tree), so a
//! printed stack starts with one line naming the plugin operation in LLVM's words
//! (`launchKernel`, `dataAlloc`, `dataDelete`), which LLVM 22's sanitizer tests look for, then
//! the frames from the runtime's entry point on. C++ frames are demangled as LLVM's are.

use offload_image::kernel_names::demangle_cxx;
use std::backtrace::Backtrace;
use std::fmt::Write;

/// The plugin operations a stack is captured for, named as LLVM's plugins name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    LaunchKernel,
    DataAlloc,
    DataDelete,
}

impl Operation {
    fn llvm_name(self) -> &'static str {
        match self {
            Operation::LaunchKernel => "launchKernel",
            Operation::DataAlloc => "dataAlloc",
            Operation::DataDelete => "dataDelete",
        }
    }
}

/// The host stack of one plugin operation.
pub struct HostStack {
    operation: Operation,
    stack: Backtrace,
}

impl HostStack {
    /// The caller's stack, for `operation`.
    #[inline(never)]
    pub fn capture(operation: Operation) -> HostStack {
        HostStack {
            operation,
            stack: Backtrace::force_capture(),
        }
    }

    /// Writes the stack, one frame a line (`    #<n> <function> <file>:<line>:<column>`): the
    /// operation first, then every frame with a name after the capture's own.
    pub fn write(&self, text: &mut String) {
        let _ = writeln!(
            text,
            "    #0 {} (offload plugin)",
            self.operation.llvm_name()
        );
        let frames = frames(&self.stack.to_string());
        // The capture's frames come first: the standard library's, then `capture`'s.
        let first = frames
            .iter()
            .rposition(|(function, _)| function.contains("HostStack::capture"))
            .map(|i| i + 1)
            .unwrap_or_else(|| {
                frames
                    .iter()
                    .take_while(|(function, _)| function.contains("backtrace"))
                    .count()
            });
        // Frames without a symbol (the runtime's own, stripped) say nothing.
        let named = frames[first..]
            .iter()
            .filter(|(function, _)| function != "<unknown>");
        for (n, (function, location)) in named.enumerate() {
            let function = demangle_cxx(function).unwrap_or_else(|| function.clone());
            let _ = match location {
                Some(location) => writeln!(text, "    #{} {function} {location}", n + 1),
                None => writeln!(text, "    #{} {function}", n + 1),
            };
        }
    }

    /// The stack as [`HostStack::write`] writes it.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        self.write(&mut text);
        text
    }
}

/// (function, location) of each frame of the standard library's rendering of a backtrace.
fn frames(rendered: &str) -> Vec<(String, Option<String>)> {
    let mut frames: Vec<(String, Option<String>)> = Vec::new();
    for line in rendered.lines() {
        let trimmed = line.trim_start();
        if let Some(location) = trimmed.strip_prefix("at ") {
            if let Some(frame) = frames.last_mut() {
                frame.1.get_or_insert_with(|| location.to_owned());
            }
        } else if let Some((number, function)) = trimmed.split_once(": ") {
            if number.bytes().all(|b| b.is_ascii_digit()) {
                frames.push((function.to_owned(), None));
            }
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn operation_from_here(operation: Operation) -> HostStack {
        let stack = HostStack::capture(operation);
        std::hint::black_box(&stack);
        stack
    }

    #[test]
    fn a_stack_starts_with_the_operation_then_the_callers_frames() {
        let text = operation_from_here(Operation::DataDelete).to_text();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("    #0 dataDelete (offload plugin)"));
        assert!(lines.next().unwrap().starts_with("    #1 "), "{text}");
        assert!(text.contains("operation_from_here"), "{text}");
        assert!(!text.contains("HostStack::capture"), "{text}");
        assert!(!text.contains("Backtrace"), "{text}");
    }

    #[test]
    fn frames_are_read_with_their_locations() {
        let rendered = "   0: std::backtrace::Backtrace::create\n             at /rust/x.rs:1:2\n   1: main\n   2: <unknown>\n";
        assert_eq!(
            frames(rendered),
            vec![
                (
                    "std::backtrace::Backtrace::create".to_string(),
                    Some("/rust/x.rs:1:2".to_string())
                ),
                ("main".to_string(), None),
                ("<unknown>".to_string(), None),
            ]
        );
    }
}
