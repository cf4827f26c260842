//! For in-process tests (this crate's and `broker/tests/`): a broker opened on a log directory
//! that has joined its cluster (registered with the controller and unfenced), as `samsa` has
//! before it serves, so that topics created through the controller can be placed on it.
//! Dropping it leaves the cluster (a controlled shutdown) and lets the broker go, so that the
//! same directory can be opened again.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::net::IoEngine;

pub struct JoinedBroker {
    broker: Option<Arc<Broker>>,
    leave: watch::Sender<bool>,
    member: Option<std::thread::JoinHandle<()>>,
}

/// Opens a broker on `config` and waits (at most 10 s) until the controller has unfenced it.
pub fn open_joined(config: BrokerConfig) -> anyhow::Result<JoinedBroker> {
    let broker = Broker::open(config, IoEngine::Epoll)?;
    let (leave, leaving) = watch::channel(false);
    let member = broker.clone();
    let thread = std::thread::Builder::new()
        .name("test-membership".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the membership");
            let membership = member.node.membership.clone();
            rt.block_on(crate::lifecycle::run(
                member.node.clone(),
                membership,
                leaving,
            ));
        })?;
    let mut joined = broker.node.membership.subscribe();
    let unfenced = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            tokio::time::timeout(
                Duration::from_secs(10),
                joined.wait_for(|m| m.broker_epoch.is_some() && !m.fenced),
            )
            .await
            .is_ok_and(|r| r.is_ok())
                && crate::metadata_wait::serving(&broker.node, Duration::from_secs(10)).await
        });
    let joined = JoinedBroker {
        broker: Some(broker),
        leave,
        member: Some(thread),
    };
    anyhow::ensure!(unfenced, "the broker was not unfenced within 10 s");
    Ok(joined)
}

impl std::ops::Deref for JoinedBroker {
    type Target = Arc<Broker>;
    fn deref(&self) -> &Arc<Broker> {
        self.broker.as_ref().expect("present until dropped")
    }
}

impl Drop for JoinedBroker {
    fn drop(&mut self) {
        self.leave.send_replace(true);
        if let Some(t) = self.member.take() {
            let _ = t.join();
        }
        if let Some(b) = self.broker.take() {
            b.node.controller.shutdown();
        }
    }
}
