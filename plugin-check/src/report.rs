//! One line per check, and the summary.

use std::fmt::Display;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    Pass,
    Fail,
    /// Not applicable here (no devices, no image, a feature the plugin says it lacks).
    Skip,
}

#[derive(Default)]
pub struct Report {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Report {
    pub fn record(&mut self, outcome: Outcome, name: &str, detail: impl Display) {
        let label = match outcome {
            Outcome::Pass => {
                self.passed += 1;
                "PASS"
            }
            Outcome::Fail => {
                self.failed += 1;
                "FAIL"
            }
            Outcome::Skip => {
                self.skipped += 1;
                "SKIP"
            }
        };
        println!("{label}  {name:<38} {detail}");
    }

    pub fn pass(&mut self, name: &str, detail: impl Display) {
        self.record(Outcome::Pass, name, detail)
    }

    pub fn fail(&mut self, name: &str, detail: impl Display) {
        self.record(Outcome::Fail, name, detail)
    }

    pub fn skip(&mut self, name: &str, detail: impl Display) {
        self.record(Outcome::Skip, name, detail)
    }

    /// Records a check's result: `Ok(detail)` passes, `Err(detail)` fails.
    pub fn check(&mut self, name: &str, result: Result<String, String>) -> bool {
        match result {
            Ok(detail) => {
                self.pass(name, detail);
                true
            }
            Err(detail) => {
                self.fail(name, detail);
                false
            }
        }
    }

    pub fn failed(&self) -> usize {
        self.failed
    }

    pub fn print_summary(&self) {
        let total = self.passed + self.failed + self.skipped;
        println!(
            "{total} checks: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        );
    }
}
