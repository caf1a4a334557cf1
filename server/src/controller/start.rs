//! Starting controllers with the server, and stopping them with it.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{Controller, Reconciler};
use crate::endpoints::ApiContext;
use crate::genericserver::GenericServer;

impl ApiContext {
    /// Starts `controller` in the background; it stops when the server's watches end at
    /// shutdown ([`ApiContext::end_watches`]). Must be called within a Tokio runtime.
    pub fn spawn_controller<R: Reconciler>(
        &self,
        controller: Controller<R>,
    ) -> tokio::task::JoinHandle<()> {
        let mut end = self.watches_end_signal();
        tokio::spawn(controller.run(async move {
            let _ = end.wait_for(|ended| *ended).await;
        }))
    }
}

impl GenericServer {
    /// Starts `controller` once the server serves (a post-start hook named
    /// `controller/<name>`), and stops it with the server.
    pub fn add_controller<R: Reconciler>(&mut self, controller: Controller<R>) {
        let name = format!("controller/{}", controller.name());
        let api = Arc::clone(self.api());
        let controller = Arc::new(Mutex::new(Some(controller)));
        self.add_post_start_hook(
            &name,
            Arc::new(move || {
                if let Some(controller) = controller.lock().take() {
                    api.spawn_controller(controller);
                }
                Box::pin(async { Ok(()) })
            }),
        );
    }
}
