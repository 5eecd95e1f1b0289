//! A one-way signal between two actors' halves of a choreography ("alice has checked").
//!
//! Some demos interleave two actors at points inside a business rule (between its check and its
//! insert). Each actor's half runs as its own future, joined on one task, and they hand the turn
//! to each other with signals. Once set, a signal stays set, like a latch.

use tokio::sync::watch;

/// A latch: `set` once, and every `wait`, before or after, returns.
pub struct Signal {
    state: watch::Sender<bool>,
}

impl Default for Signal {
    fn default() -> Self {
        Signal {
            state: watch::Sender::new(false),
        }
    }
}

impl Signal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the signal; everyone waiting goes on.
    pub fn set(&self) {
        self.state.send_replace(true);
    }

    /// Waits until the signal is set (at once if it already is).
    pub async fn wait(&self) {
        let mut state = self.state.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = state.wait_for(|set| *set).await;
    }
}

/// Resolves once `flag` is set (the engine closing, a server saying goodbye); also when its sender
/// is gone, which means it will never be set and the waiter should stop waiting.
pub async fn raised(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|raised| *raised).await;
}

#[cfg(test)]
mod tests {
    use super::Signal;
    use std::time::Duration;

    /// `wait` returns within a second, or the test fails (a broken latch must fail the test, not
    /// hang the suite).
    async fn returns(signal: &Signal, what: &str) {
        tokio::time::timeout(Duration::from_secs(1), signal.wait())
            .await
            .unwrap_or_else(|_| panic!("{what}: wait did not return"));
    }

    #[tokio::test]
    async fn a_set_signal_stays_set() {
        let signal = Signal::new();
        signal.set();
        returns(&signal, "the first wait after set").await;
        returns(&signal, "a second wait").await;
    }

    #[tokio::test]
    async fn a_waiter_goes_on_when_set() {
        let signal = Signal::new();
        let (_, ()) = tokio::join!(returns(&signal, "a waiter, set while it waits"), async { signal.set() });
    }

    #[tokio::test]
    async fn an_unset_signal_keeps_its_waiter_waiting() {
        let signal = Signal::new();
        let waited = tokio::time::timeout(Duration::from_millis(50), signal.wait()).await;
        assert!(waited.is_err(), "wait returned before anyone set the signal");
    }
}
