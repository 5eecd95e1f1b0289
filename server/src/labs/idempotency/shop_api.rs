//! The shop API as its own process, `racelab actor shop-api`, for the scenarios where it dies.
//!
//! The tutorial's `-crash-after-charge` is `os.Exit(1)` right after the provider charged: the
//! process is gone before it writes anything, its connections drop, the phone reads `EOF`, and
//! the key stays `started` with nobody left to finish it. A task that is cancelled would not show
//! that honestly (its spawned work would run on), so the API runs as a child process that the
//! engine kills with SIGKILL at the crash point `after_charge`, and is started again with the
//! tutorial's next flags (`-lease 10s -pass-key`) on the same port, as the tutorial restarts its
//! API on :8080.

use super::shop::{self, Mode};
use super::{InFlight, POOL};
use crate::engine::{ChildActor, ChildContext, ChildKind, Run, RunError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The kind's arguments: the tutorial's flags, the provider it calls, and the port to listen on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Flags {
    pub mode: Mode,
    /// `-crash-after-charge`.
    pub crash_after_charge: bool,
    /// `http://127.0.0.1:<port>` of the run's provider.
    pub provider: String,
    /// The loopback port to listen on; 0 for any free one.
    pub port: u16,
}

/// `racelab actor shop-api`.
pub static SHOP_API: ChildKind = ChildKind {
    name: "shop-api",
    run: |context| Box::pin(serve(context)),
};

async fn serve(context: &ChildContext) -> Result<(), RunError> {
    let flags: Flags = serde_json::from_value(context.args.clone())
        .map_err(|e| RunError::Other(format!("shop-api arguments: {e}")))?;
    let shop = shop::Shop {
        pool: context.pool("shop", POOL).await?,
        lane: context.lane.clone(),
        provider: flags.provider.clone(),
        mode: flags.mode,
        in_flight: Arc::new(InFlight::default()),
        crash_after_charge: flags.crash_after_charge.then(|| context.crasher()),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", flags.port))
        .await
        .map_err(|e| RunError::Other(format!("shop-api cannot listen on port {}: {e}", flags.port)))?;
    let port = listener
        .local_addr()
        .map_err(|e| RunError::Other(format!("shop-api: {e}")))?
        .port();
    context
        .lane
        .note(format!("api ({}) listening on :{port}", describe(&flags)));
    context.listening(port);
    axum::serve(listener, shop::router(shop))
        .await
        .map_err(|e| RunError::Other(format!("shop-api stopped: {e}")))
}

/// The flags as the tutorial writes them: `idempotent -lease 10s -pass-key -crash-after-charge`.
pub fn describe(flags: &Flags) -> String {
    let mut text = match flags.mode {
        Mode::Naive => "naive".to_owned(),
        Mode::CheckFirst => "checkfirst".to_owned(),
        Mode::Idempotent(options) => {
            let mut text = "idempotent".to_owned();
            if !options.lease.is_zero() {
                text.push_str(&format!(" -lease {}", lease_text(options.lease)));
            }
            if options.provider_key {
                text.push_str(" -pass-key");
            }
            text
        }
    };
    if flags.crash_after_charge {
        text.push_str(" -crash-after-charge");
    }
    text
}

/// A lease as Go prints a duration: `10s`, `500ms`.
fn lease_text(lease: Duration) -> String {
    if lease.subsec_millis() == 0 {
        format!("{}s", lease.as_secs())
    } else {
        format!("{}ms", lease.as_millis())
    }
}

/// The shop API process a scenario holds: the child, and where it listens.
pub struct ShopProcess {
    pub actor: ChildActor,
    port: u16,
    provider: String,
    run: Run,
}

impl ShopProcess {
    /// Starts the API as lane `shop` with `mode` (crashing after a charge if `crash_after_charge`)
    /// in front of the provider at `provider`, and waits until it listens.
    pub async fn start(run: &Run, mode: Mode, crash_after_charge: bool, provider: &str) -> Result<Self, RunError> {
        let flags = Flags {
            mode,
            crash_after_charge,
            provider: provider.to_owned(),
            port: 0,
        };
        let mut actor = run.process("shop", SHOP_API.name, to_args(&flags)?).await?;
        let port = actor.wait_listening(LISTEN_TIMEOUT).await?;
        let shop = ShopProcess {
            actor,
            port,
            provider: provider.to_owned(),
            run: run.clone(),
        };
        shop.name_it();
        Ok(shop)
    }

    /// `http://127.0.0.1:<port>`, the phone's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the API again (killing it first if it still runs) with other flags, on the same
    /// port, as the tutorial restarts its API on :8080.
    pub async fn restart(&mut self, mode: Mode, crash_after_charge: bool) -> Result<(), RunError> {
        let flags = Flags {
            mode,
            crash_after_charge,
            provider: self.provider.clone(),
            port: self.port,
        };
        self.actor.restart_with(to_args(&flags)?).await?;
        self.port = match self.actor.wait_listening(LISTEN_TIMEOUT).await {
            Ok(port) => port,
            Err(_) => {
                // Its port was taken in the moment it was free (it shows as a failed start on
                // the lane): any free one, then.
                self.actor.restart_with(to_args(&Flags { port: 0, ..flags })?).await?;
                self.actor.wait_listening(LISTEN_TIMEOUT).await?
            }
        };
        self.name_it();
        Ok(())
    }

    /// Tells the run that lane `shop` serves at this port, so the phone's requests point at it.
    fn name_it(&self) {
        self.run
            .name_server(std::net::SocketAddr::from(([127, 0, 0, 1], self.port)), "shop");
    }

    /// Stops the API politely (SIGTERM) at the end of the scenario.
    pub async fn stop(mut self) -> Result<(), RunError> {
        self.actor.stop().await
    }
}

/// How long a starting API may take to listen (a process start and a pool of sessions).
const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);

fn to_args(flags: &Flags) -> Result<serde_json::Value, RunError> {
    serde_json::to_value(flags).map_err(|e| RunError::Other(format!("shop-api arguments: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labs::idempotency::shop::Options;

    #[test]
    fn flags_read_as_the_tutorials_command_lines() {
        let flags = |mode, crash_after_charge| Flags {
            mode,
            crash_after_charge,
            provider: String::new(),
            port: 0,
        };
        assert_eq!(describe(&flags(shop::CLAIM, true)), "idempotent -crash-after-charge");
        assert_eq!(
            describe(&flags(
                Mode::Idempotent(Options::leased(Duration::from_secs(10), true)),
                false
            )),
            "idempotent -lease 10s -pass-key"
        );
        assert_eq!(
            describe(&flags(
                Mode::Idempotent(Options::leased(Duration::from_millis(500), false)),
                false
            )),
            "idempotent -lease 500ms"
        );
    }

    #[test]
    fn flags_survive_the_trip_to_the_child() {
        let flags = Flags {
            mode: Mode::Idempotent(Options::leased(Duration::from_millis(500), true)),
            crash_after_charge: true,
            provider: "http://127.0.0.1:1".into(),
            port: 8080,
        };
        let back: Flags = serde_json::from_value(to_args(&flags).expect("json")).expect("back");
        assert_eq!(back.mode, flags.mode);
        assert_eq!((back.crash_after_charge, back.port), (true, 8080));
    }
}
