//! [`Failure`]: why a command failed, as the one line `memory` prints and the code it exits
//! with (the codes `memory --help` lists).

use std::process::ExitCode;

use memory_core::{ErrorKind, MemoryError};

/// Why a command failed: a one-line message and the exit code.
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// Invalid input or configuration (exit 2).
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            code: ErrorKind::InvalidInput.exit_code(),
            message: message.into(),
        }
    }

    /// A conflict for a person to decide (exit 3).
    pub fn conflict(message: impl Into<String>) -> Failure {
        Failure {
            code: ErrorKind::Conflict.exit_code(),
            message: message.into(),
        }
    }

    /// A failure outside memory (exit 1).
    pub fn other(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
        }
    }

    /// Prints the failure on stderr, on one line, and gives the code the program ends with.
    pub fn report(self) -> ExitCode {
        let message = self.message.replace('\n', "; ");
        eprintln!("error: {message}");
        ExitCode::from(self.code)
    }
}

impl From<MemoryError> for Failure {
    fn from(err: MemoryError) -> Failure {
        Failure {
            code: err.kind().exit_code(),
            message: err.to_string(),
        }
    }
}
