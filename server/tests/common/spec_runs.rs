//! What a reader's spec run left behind, in the database it played in (`specs::confine`).

use racelab::specs::confine::place_of;

/// racelab's own user, on the maintenance database of the server at `url`.
pub async fn admin_on(url: &str) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url.parse().expect("a database URL");
    config.dbname("postgres");
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.expect("PostgreSQL answers");
    tokio::spawn(connection);
    client
}

/// What the spec run played as `id` (the id `specs::play` was given: a lab engine's run's
/// sandbox id, [`super::named`]) left on the server at `url`, counted: sessions in its database
/// or as its role, its prepared transactions and advisory locks, anything its role owns or was
/// granted in any database, memberships but the readers' role, settings but the one made, and a
/// role still open to logins. A run's database is handed out again only once clean (and is
/// dropped otherwise), so one another run has taken since counts as clean (asked after the
/// query); a spec refused before it played took none.
pub async fn left_by_spec_run(url: &str, id: &str) -> i64 {
    let Some(place) = place_of(id) else {
        return 0;
    };
    // A run's database is reset after the run returns.
    racelab::specs::confine::reset_done(&place.database).await;
    let left: i64 = admin_on(url)
        .await
        .query_one(
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = $1 OR usename = $1)
                  + (SELECT count(*) FROM pg_prepared_xacts WHERE database = $1 OR owner = $1)
                  + (SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                     WHERE l.locktype = 'advisory' AND d.datname = $1)
                  + (SELECT count(*) FROM pg_shdepend s JOIN pg_roles r ON r.oid = s.refobjid
                     WHERE s.dbid <> 0 AND r.rolname = $1)
                  + (SELECT count(*) FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid
                     JOIN pg_roles m ON m.oid = a.member
                     WHERE (g.rolname = $1 OR m.rolname = $1) AND g.rolname <> 'racelab_reader')
                  + (SELECT count(*) FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
                     WHERE r.rolname = $1 AND s.setconfig <> ARRAY['temp_file_limit=65536kB'])
                  + (SELECT count(*) FROM pg_roles WHERE rolname = $1 AND rolconnlimit <> 0)",
            &[&place.database],
        )
        .await
        .expect("the leak query")
        .get(0);
    if place.taken_again() { 0 } else { left }
}
