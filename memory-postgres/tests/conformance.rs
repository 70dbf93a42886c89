//! The contract, on PostgreSQL: each test in a schema of its own.

mod common;

use memory_conformance::Fixture;
use memory_postgres::{PoolMode, PostgresProvider};

async fn setup() -> Option<Fixture<PostgresProvider>> {
    common::fixture(PoolMode::Session).await
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds, stored_history);
memory_conformance::notes_suite!(setup);

/// The identity-map cases through two providers on one schema, each with its own pool, as two
/// hosts would have.
mod identity_map {
    use memory_conformance::identity::Maps;
    use memory_postgres::PoolMode;

    use super::common;

    async fn setup() -> Option<Maps> {
        common::identity_maps(PoolMode::Session).await
    }

    memory_conformance::identity_map_suite!(setup);
}
