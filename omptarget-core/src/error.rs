//! The runtime's error type: a message for the user, already worded.

use plugin_api::PluginError;
use std::fmt;

/// Boxed, so that a `Result<()>` is one word: every fallible step of a construct returns one,
/// and a 48-byte error made each return go through memory (some 50 instructions a construct).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OffloadError(Box<ErrorLines>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ErrorLines {
    /// The first error line; empty when the cause was already printed (LLVM's MESSAGE lines).
    pub message: String,
    /// The lines the layers above add, outermost last, as LLVM reports a failed construct
    /// ("Call to targetDataBegin failed, abort target.", ...).
    pub context: Vec<String>,
}

impl std::ops::Deref for OffloadError {
    type Target = ErrorLines;
    fn deref(&self) -> &ErrorLines {
        &self.0
    }
}

impl std::ops::DerefMut for OffloadError {
    fn deref_mut(&mut self) -> &mut ErrorLines {
        &mut self.0
    }
}

impl OffloadError {
    #[cold]
    pub(crate) fn new(message: impl Into<String>) -> Self {
        OffloadError(Box::new(ErrorLines {
            message: message.into(),
            context: Vec::new(),
        }))
    }

    /// An error whose explanation has already been printed.
    pub(crate) fn already_reported() -> Self {
        OffloadError::new("")
    }

    pub(crate) fn with_context(mut self, line: impl Into<String>) -> Self {
        self.context.push(line.into());
        self
    }

    /// Every line to print, in order.
    pub(crate) fn lines(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.message.as_str())
            .chain(self.context.iter().map(String::as_str))
            .filter(|l| !l.is_empty())
    }
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<&str> = self.lines().collect();
        f.write_str(&lines.join(" "))
    }
}

impl From<PluginError> for OffloadError {
    fn from(e: PluginError) -> Self {
        OffloadError::new(format!("plugin error: {e}"))
    }
}

pub(crate) type Result<T> = std::result::Result<T, OffloadError>;
