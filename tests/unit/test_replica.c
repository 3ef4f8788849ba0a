/* test_replica — the ids a fleet replica mints (replica.c): every id checks as this replica's,
 * a changed character anywhere or another kind is refused, another replica's real id is
 * named as such, an id of this replica's previous process is told apart, and the settings
 * are checked at start. */
#include "check.h"
#include "replica.h"

#include <stdio.h>
#include <string.h>

#define SECRET "unit-test-fleet-secret-0123456789"

static void settings_checked(void)
{
    char err[300];
    CHECK(replica_init(NULL, NULL, err, sizeof(err)) == 0 && replica_id() == NULL,
          "no replica id: not a fleet");
    CHECK(replica_init("R1", SECRET, err, sizeof(err)) < 0 && strstr(err, "CODEMCP_REPLICA_ID"),
          "upper case refused: %s", err);
    CHECK(replica_init("r1.x", SECRET, err, sizeof(err)) < 0, "a dot refused (it separates)");
    char longid[80];
    memset(longid, 'a', 64);
    longid[64] = '\0';
    CHECK(replica_init(longid, SECRET, err, sizeof(err)) < 0, "64 characters refused");
    CHECK(replica_init("r1", NULL, err, sizeof(err)) < 0 && strstr(err, "CODEMCP_FLEET_SECRET"),
          "an id without a secret refused: %s", err);
    CHECK(replica_init("r1", "short", err, sizeof(err)) < 0, "a short secret refused");
}

static void ids_sealed(void)
{
    char err[300], id[REPLICA_MINTED_MAX], who[REPLICA_ID_MAX + 1], other[REPLICA_MINTED_MAX];
    CHECK(replica_init("r2", SECRET, err, sizeof(err)) == 0, "r2 starts");
    CHECK(replica_mint("sid", other, sizeof(other)) == 0 && strncmp(other, "r2.", 3) == 0,
          "r2 mints %s", other);
    CHECK(replica_init("r1", SECRET, err, sizeof(err)) == 0, "r1 starts");
    CHECK(replica_mint("sid", id, sizeof(id)) == 0 && strncmp(id, "r1.", 3) == 0, "r1 mints %s",
          id);
    CHECK(replica_check("sid", id, who) == REPLICA_MINE, "its own id is MINE");
    CHECK(replica_check("ns", id, who) == REPLICA_FORGED, "a session id is not a handle");
    CHECK(replica_check("sid", other, who) == REPLICA_OTHER && strcmp(who, "r2") == 0,
          "r2's real id names r2");
    int all = 1;
    for (size_t i = 0; i < strlen(id); i++) {
        char bad[REPLICA_MINTED_MAX];
        memcpy(bad, id, sizeof(bad));
        bad[i] = bad[i] == 'a' ? 'b' : bad[i] == '.' ? '-' : 'a';
        if (replica_check("sid", bad, who) != REPLICA_FORGED)
            all = 0;
    }
    CHECK(all, "a change of any one character is refused");
    char steered[REPLICA_MINTED_MAX];
    snprintf(steered, sizeof(steered), "r1%s", other + 2); /* r2's id renamed to r1 */
    CHECK(replica_check("sid", steered, who) == REPLICA_FORGED, "renaming the replica is refused");
    CHECK(replica_check("sid", "", who) == REPLICA_FORGED &&
              replica_check("sid", "r1.", who) == REPLICA_FORGED,
          "empty and truncated ids are refused");
    /* The same replica restarted: a new boot id, so the old id is EARLIER. */
    CHECK(replica_init("r1", SECRET, err, sizeof(err)) == 0, "r1 restarts");
    CHECK(replica_check("sid", id, who) == REPLICA_EARLIER && strcmp(who, "r1") == 0,
          "its previous process's id is EARLIER");
    /* Another fleet (another secret): nothing of this one checks. */
    CHECK(replica_init("r1", SECRET "-other", err, sizeof(err)) == 0, "another fleet's r1");
    CHECK(replica_check("sid", other, who) == REPLICA_FORGED, "another fleet's ids are refused");
}

int main(void)
{
    settings_checked();
    ids_sealed();
    return CHECK_DONE();
}
