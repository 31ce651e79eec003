//! Writing whole lines to stderr (or another stream), for the debug log, the
//! `LIBOMPTARGET_INFO` lines and the user-facing messages alike.

use std::io::Write;

/// Writes `line` and a newline to `out` with one `write` call. Processes that share a stream
/// (an MPI job's program and its device processes, whose output `mpirun` forwards) then
/// interleave whole lines, as LLVM's `fprintf` lines do; `writeln!` on unbuffered stderr
/// writes each formatted piece on its own.
pub(crate) fn write_line(out: &mut dyn Write, line: std::fmt::Arguments<'_>) {
    let mut text = String::with_capacity(128);
    let _ = std::fmt::Write::write_fmt(&mut text, line);
    text.push('\n');
    let _ = out.write_all(text.as_bytes());
}

/// [`write_line`] to stderr.
pub fn stderr_line(line: std::fmt::Arguments<'_>) {
    write_line(&mut std::io::stderr().lock(), line);
}

#[test]
fn a_line_is_written_with_one_call() {
    struct Calls(Vec<Vec<u8>>);
    impl Write for Calls {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Calls(Vec::new());
    write_line(
        &mut out,
        format_args!("omptarget device {} info: {}, Size={}", 0, "Copying", 4),
    );
    assert_eq!(
        out.0,
        [b"omptarget device 0 info: Copying, Size=4\n".to_vec()]
    );
}
