//! Medians and spread over repeated runs.

/// The measurements of one metric on one runtime.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    pub fn push(&mut self, v: f64) {
        self.0.push(v);
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }

    pub fn median(&self) -> Option<f64> {
        let v = self.sorted();
        match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    /// The fastest run (for times): the runtime's cost with the least interference.
    pub fn min(&self) -> Option<f64> {
        self.sorted().first().copied()
    }

    /// Ours over LLVM's run by run (both ran a run's case back to back), as samples: drift of
    /// the machine between runs cancels out of each ratio. Runs missing either are left out.
    pub fn paired_ratios(ours: &Samples, llvm: &Samples) -> Samples {
        Samples(
            ours.0
                .iter()
                .zip(&llvm.0)
                .filter(|(_, l)| **l != 0.0)
                .map(|(o, l)| o / l)
                .collect(),
        )
    }

    /// The smallest and the largest sample.
    pub fn range(&self) -> Option<(f64, f64)> {
        let v = self.sorted();
        Some((*v.first()?, *v.last()?))
    }

    /// (max - min) / median, as a percentage: how noisy the runs were.
    pub fn spread_percent(&self) -> Option<f64> {
        let v = self.sorted();
        let median = self.median()?;
        (median != 0.0).then(|| 100.0 * (v[v.len() - 1] - v[0]) / median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = Samples(vec![3.0, 1.0, 2.0]);
        assert_eq!(s.median(), Some(2.0));
        assert_eq!(s.spread_percent(), Some(100.0));
        assert_eq!(Samples(vec![1.0, 3.0]).median(), Some(2.0));
        assert_eq!(Samples::default().median(), None);
        assert_eq!(s.min(), Some(1.0));
        assert_eq!(s.range(), Some((1.0, 3.0)));
        assert_eq!(Samples::default().min(), None);
    }

    #[test]
    fn paired_ratios_divide_run_by_run() {
        let ours = Samples(vec![1.0, 4.0, 3.0]);
        let llvm = Samples(vec![10.0, 8.0, 0.0]);
        assert_eq!(Samples::paired_ratios(&ours, &llvm).0, vec![0.1, 0.5]);
    }
}
