import GRDB

/// The store's schema, as named migrations.
///
/// Append only: a migration that has shipped is never edited or removed; a change is a new
/// migration at the end. New migrations add tables, columns (with defaults) and indexes, so an
/// older errorbusd can still run on a database a newer one migrated (it logs a warning). A
/// migration that changes how existing rows are written is listed in `StoreFormat.requirements`
/// with its undo: an errorbusd that does not know it refuses the store, and
/// `errorbusd --downgrade-store` turns it back (docs/store.md).
///
/// Dates are INTEGER milliseconds since 1970 (`datetime(createdAt / 1000, 'unixepoch')` in
/// `sqlite3`).
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()

        // Outbox jobs. `seq` (the rowid) is the insertion order, so "oldest first" is a walk of the
        // `job_state` index, whose entries end with the rowid: `WHERE state = ? ORDER BY seq`
        // needs no sort. `id` is the idempotency key and is unique.
        migrator.registerMigration("1 jobs") { db in
            try db.execute(
                sql: """
                    CREATE TABLE job (
                        seq INTEGER PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        service TEXT NOT NULL,
                        fileName TEXT NOT NULL,
                        path TEXT NOT NULL,
                        size INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        lastError TEXT,
                        incident INTEGER,
                        reason TEXT,
                        createdAt INTEGER NOT NULL,
                        updatedAt INTEGER NOT NULL,
                        deliveredAt INTEGER
                    );
                    CREATE INDEX job_state ON job(state);
                    """
            )
        }

        // Incident history, one row per incident id, updated as the incident progresses.
        migrator.registerMigration("2 incidents") { db in
            try db.execute(
                sql: """
                    CREATE TABLE incident (
                        id INTEGER PRIMARY KEY,
                        service TEXT NOT NULL,
                        category TEXT NOT NULL,
                        categoryDetail TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        cause TEXT NOT NULL,
                        title TEXT NOT NULL,
                        message TEXT NOT NULL,
                        next TEXT,
                        state TEXT NOT NULL,
                        failures INTEGER NOT NULL,
                        parked INTEGER NOT NULL,
                        released INTEGER NOT NULL,
                        deadLettered INTEGER NOT NULL,
                        resolution TEXT,
                        openedAt INTEGER NOT NULL,
                        updatedAt INTEGER NOT NULL,
                        closedAt INTEGER
                    );
                    """
            )
        }

        // What the loader knows of each remote resource.
        migrator.registerMigration("3 resources") { db in
            try db.execute(
                sql: """
                    CREATE TABLE resource (
                        name TEXT PRIMARY KEY NOT NULL,
                        etag TEXT,
                        updatedAt INTEGER NOT NULL
                    );
                    """
            )
        }

        // How many jobs each service has in each state, kept by triggers in the transaction that
        // changes a job, so a status display reads a handful of rows however many jobs are
        // pending (counting them walked 20,000 table rows in a storm). Triggers, not code in
        // JobStore: a count can never disagree with the jobs, whoever writes them.
        migrator.registerMigration("4 job counts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE job_count (
                        service TEXT NOT NULL,
                        state TEXT NOT NULL,
                        count INTEGER NOT NULL,
                        PRIMARY KEY (service, state)
                    ) WITHOUT ROWID;
                    INSERT INTO job_count (service, state, count)
                        SELECT service, state, COUNT(*) FROM job GROUP BY service, state;
                    CREATE TRIGGER job_count_insert AFTER INSERT ON job BEGIN
                        INSERT INTO job_count (service, state, count) VALUES (NEW.service, NEW.state, 1)
                            ON CONFLICT (service, state) DO UPDATE SET count = count + 1;
                    END;
                    CREATE TRIGGER job_count_delete AFTER DELETE ON job BEGIN
                        UPDATE job_count SET count = count - 1 WHERE service = OLD.service AND state = OLD.state;
                    END;
                    CREATE TRIGGER job_count_update AFTER UPDATE OF service, state ON job
                    WHEN OLD.state IS NOT NEW.state OR OLD.service IS NOT NEW.service BEGIN
                        UPDATE job_count SET count = count - 1 WHERE service = OLD.service AND state = OLD.state;
                        INSERT INTO job_count (service, state, count) VALUES (NEW.service, NEW.state, 1)
                            ON CONFLICT (service, state) DO UPDATE SET count = count + 1;
                    END;
                    """
            )
        }

        // The bytes each service has in each state beside the count (a backlog's size in bytes is
        // one row read, as its length is), and the dead letters by when they were set aside: the
        // retention prunes the oldest first and the health check counts the last hour's, each a
        // walk of only the dead letters concerned. A partial index: the other jobs, all the
        // uploads, never touch it.
        migrator.registerMigration("5 backlog bytes, dead-letter age") { db in
            try db.execute(
                sql: """
                    ALTER TABLE job_count ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
                    UPDATE job_count SET bytes = (
                        SELECT COALESCE(SUM(size), 0) FROM job WHERE job.service = job_count.service AND job.state = job_count.state
                    );
                    DROP TRIGGER job_count_insert;
                    DROP TRIGGER job_count_delete;
                    DROP TRIGGER job_count_update;
                    CREATE TRIGGER job_count_insert AFTER INSERT ON job BEGIN
                        INSERT INTO job_count (service, state, count, bytes) VALUES (NEW.service, NEW.state, 1, NEW.size)
                            ON CONFLICT (service, state) DO UPDATE SET count = count + 1, bytes = bytes + NEW.size;
                    END;
                    CREATE TRIGGER job_count_delete AFTER DELETE ON job BEGIN
                        UPDATE job_count SET count = count - 1, bytes = bytes - OLD.size
                        WHERE service = OLD.service AND state = OLD.state;
                    END;
                    CREATE TRIGGER job_count_update AFTER UPDATE OF service, state ON job
                    WHEN OLD.state IS NOT NEW.state OR OLD.service IS NOT NEW.service BEGIN
                        UPDATE job_count SET count = count - 1, bytes = bytes - OLD.size
                        WHERE service = OLD.service AND state = OLD.state;
                        INSERT INTO job_count (service, state, count, bytes) VALUES (NEW.service, NEW.state, 1, NEW.size)
                            ON CONFLICT (service, state) DO UPDATE SET count = count + 1, bytes = bytes + NEW.size;
                    END;
                    CREATE INDEX job_dead_letter_age ON job(updatedAt) WHERE state = 'deadLettered';
                    """
            )
        }

        // A resource's Last-Modified beside its ETag, and the URL both belong to.
        migrator.registerMigration("6 resource validators") { db in
            try db.execute(
                sql: """
                    ALTER TABLE resource ADD COLUMN lastModified TEXT;
                    ALTER TABLE resource ADD COLUMN url TEXT;
                    """
            )
        }

        // The content's SHA-256 of a job whose key is not it: an API that tells files by their
        // name keys them by content and name, so that two names with one content are two uploads.
        migrator.registerMigration("7 job digest") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN digest TEXT")
        }

        // An incident's UUID (`IncidentSnapshot.uuid`), unique across hosts and runs; none for
        // the incidents recorded before.
        migrator.registerMigration("8 incident uuid") { db in
            try db.execute(sql: "ALTER TABLE incident ADD COLUMN uuid TEXT")
        }

        // What tells a rescan that a file is already a job without reading it again: the file's
        // modification time when it was queued (nanoseconds since the epoch; none for the jobs
        // recorded before), and an index of the names of the jobs whose file may still be in the
        // outbox. Delivered jobs, the bulk of the table, stay out of it.
        migrator.registerMigration("9 job file stamp") { db in
            try db.execute(
                sql: """
                    ALTER TABLE job ADD COLUMN modifiedAt INTEGER;
                    CREATE INDEX job_file ON job(fileName) WHERE state != 'delivered';
                    """
            )
        }

        // Job keys that are hex SHA-256 digests (all the daemon makes) as their 32 bytes
        // (`StoredJobKey`): half the room in the row and in the key's unique index. The one
        // migration that changes values rather than adding: an errorbusd from before it cannot
        // read the keys (docs/store.md says how to turn them back).
        migrator.registerMigration("10 binary job keys") { db in
            let storedKey = DatabaseFunction("errorbus_job_key", argumentCount: 1, pure: true) { values in
                guard let id = String.fromDatabaseValue(values[0]) else { return values[0] }
                return StoredJobKey(id).databaseValue
            }
            db.add(function: storedKey)
            defer { db.remove(function: storedKey) }
            try db.execute(sql: "UPDATE job SET id = errorbus_job_key(id) WHERE typeof(id) = 'text' AND length(id) = 64")
        }

        // How many times a job failed on its own before errorbusd last stopped (the bus set it
        // aside: `BusEvent.jobIsolated`): submitted again with `Job.failedOnItsOwn`, it goes
        // straight to an incident of its own at its next failure instead of being taken for its
        // API's failure again. Added with a default: an older errorbusd runs on it unaware.
        migrator.registerMigration("11 job isolation") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN ownFailures INTEGER NOT NULL DEFAULT 0")
        }

        // What an errorbusd must know to read the store, and which errorbusd last wrote it
        // (`StoreFormat`): an older errorbusd refuses a store it cannot read instead of misreading
        // it, and a newer one can turn the store back for it.
        migrator.registerMigration("12 store format") { db in
            try StoreFormat.createTables(db)
        }

        // Jobs the bus parks under an incident, as rows (`JobState.parked`) rather than closures
        // the bus keeps: a waiting upload costs no memory however long the outage. A parked job's
        // `incident` (the column dead letters already use) is the one it waits on; `failedUnder`
        // says whether it ran and met the incident (1) or was merely held back behind it (0). The
        // partial index holds only the parked jobs, by incident in the order an incident takes
        // them back (those that merely wait, then those that failed, each oldest first: its
        // entries end with `seq`), so that taking one or releasing an incident's walks only that
        // incident's entries, whatever else the table holds; queued, in-flight and delivered jobs
        // never touch it. `state` leads it, one value: a count per incident reads the index
        // alone (SQLite does not count a partial index's condition as a column it holds). A
        // requirement (`StoreFormat`): an errorbusd from before it cannot read a `parked` row.
        // `--downgrade-store` queues them again and leaves the column and the index, so this
        // migration runs again on what it finds.
        migrator.registerMigration("13 parked jobs") { db in
            let columns = Set(try db.columns(in: "job").map(\.name))
            if !columns.contains("failedUnder") {
                try db.execute(sql: "ALTER TABLE job ADD COLUMN failedUnder INTEGER NOT NULL DEFAULT 0")
            }
            // When a queued job may run again (milliseconds), after a back-off the bus asked for
            // (its scope paced it); NULL: now. An older errorbusd ignores it and runs it sooner.
            if !columns.contains("retryAt") {
                try db.execute(sql: "ALTER TABLE job ADD COLUMN retryAt INTEGER")
            }
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS job_parked ON job(state, incident, failedUnder) WHERE state = 'parked'")
            // How many jobs are parked under each incident, kept by triggers as `job_count` is:
            // status asks it on every call, and counting a million parked jobs in the index took
            // a tenth of a second. Rows stay at zero once an incident's jobs are gone (one per
            // incident that parked any). Made again from the jobs whenever this runs.
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS parked_count (incident INTEGER PRIMARY KEY, count INTEGER NOT NULL);
                    DELETE FROM parked_count;
                    INSERT INTO parked_count (incident, count)
                        SELECT incident, COUNT(*) FROM job WHERE state = 'parked' AND incident IS NOT NULL GROUP BY incident;
                    DROP TRIGGER IF EXISTS parked_count_insert;
                    DROP TRIGGER IF EXISTS parked_count_delete;
                    DROP TRIGGER IF EXISTS parked_count_update;
                    CREATE TRIGGER parked_count_insert AFTER INSERT ON job
                    WHEN NEW.state = 'parked' AND NEW.incident IS NOT NULL BEGIN
                        INSERT INTO parked_count (incident, count) VALUES (NEW.incident, 1)
                            ON CONFLICT (incident) DO UPDATE SET count = count + 1;
                    END;
                    CREATE TRIGGER parked_count_delete AFTER DELETE ON job
                    WHEN OLD.state = 'parked' AND OLD.incident IS NOT NULL BEGIN
                        UPDATE parked_count SET count = count - 1 WHERE incident = OLD.incident;
                    END;
                    CREATE TRIGGER parked_count_update AFTER UPDATE OF state, incident ON job
                    WHEN (OLD.state = 'parked' OR NEW.state = 'parked')
                        AND (OLD.state IS NOT NEW.state OR OLD.incident IS NOT NEW.incident) BEGIN
                        UPDATE parked_count SET count = count - 1
                        WHERE OLD.state = 'parked' AND incident = OLD.incident;
                        INSERT INTO parked_count (incident, count)
                            SELECT NEW.incident, 1 WHERE NEW.state = 'parked' AND NEW.incident IS NOT NULL
                            ON CONFLICT (incident) DO UPDATE SET count = count + 1;
                    END;
                    """
            )
        }

        // Large files uploaded in parts (S3's multipart upload): the store's upload id and the
        // parts it acknowledged, so that an outage, a restart or a `kill -9` resumes at the next
        // part. Keyed by the job's key as `job` holds it (`StoredJobKey`); a row whose job ended
        // without a delivery is an upload to abort. New tables only: an older errorbusd runs on
        // them unaware (and starts its large files again from zero).
        migrator.registerMigration("14 multipart uploads") { db in
            try db.execute(
                sql: """
                    CREATE TABLE multipart_upload (
                        job BLOB PRIMARY KEY,
                        uploadID TEXT NOT NULL,
                        url TEXT NOT NULL,
                        partSize INTEGER NOT NULL,
                        createdAt INTEGER NOT NULL
                    );
                    CREATE TABLE multipart_part (
                        job BLOB NOT NULL,
                        number INTEGER NOT NULL,
                        etag TEXT NOT NULL,
                        checksum TEXT NOT NULL,
                        PRIMARY KEY (job, number)
                    ) WITHOUT ROWID;
                    """
            )
        }

        return migrator
    }
}
