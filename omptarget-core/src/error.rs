//! The runtime's error type: a message for the user, already worded.

use plugin_api::PluginError;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadError {
    pub message: String,
}

impl OffloadError {
    pub fn new(message: impl Into<String>) -> Self {
        OffloadError {
            message: message.into(),
        }
    }
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<PluginError> for OffloadError {
    fn from(e: PluginError) -> Self {
        OffloadError::new(format!("plugin error: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, OffloadError>;
