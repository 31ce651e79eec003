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
    }
}
