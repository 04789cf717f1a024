/* fuzz_folded.c — libFuzzer target for the folded-stacks reader.
 *
 * Any input either fails with a message, or gives a well-formed profile
 * (fuzz_common.h) that every writer accepts; its folded text matches the
 * portable grammar and reads back to the very same text (names with every
 * awkward character round-trip); and its .bspy file reads back equal. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bspy_round_trip(const bs_profile *p, const char *folded, size_t folded_len)
{
    size_t len, again_len;
    char *bytes = fuzz_write(bs_write_bspy, p, &len);
    bs_profile q;
    bs_read_error e;
    FILE *in = fuzz_open((const uint8_t *)bytes, len);
    CHECK(bs_read_bspy(in, "fuzz.bspy", &q, &e) == 0);
    fclose(in);
    char *again = fuzz_folded(&q, &again_len);
    CHECK(again_len == folded_len && memcmp(again, folded, folded_len) == 0);
    free(again);
    free(bytes);
    bs_profile_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bs_profile p, q;
    bs_read_error e;
    FILE *in = fuzz_open(data, size);
    int rc = bs_read_folded(in, "fuzz.folded", &p, &e);
    fclose(in);
    if (rc != 0) {
        fuzz_check_error(&e);
        CHECK(e.line >= 1 && e.offset <= size);
        return 0;
    }
    fuzz_check_profile(&p);
    size_t w1_len, w2_len;
    char *w1 = fuzz_folded(&p, &w1_len), why[128];
    if (tu_check_folded(w1, w1_len, why, sizeof why) != 0) {
        fprintf(stderr, "written folded text breaks the grammar: %s\n", why);
        abort();
    }
    in = fuzz_open((const uint8_t *)w1, w1_len);
    rc = bs_read_folded(in, "w1", &q, &e);
    fclose(in);
    if (rc != 0) {
        fprintf(stderr, "our own folded output was refused: line %llu: %s\n", (unsigned long long)e.line, e.msg);
        abort();
    }
    char *w2 = fuzz_folded(&q, &w2_len);
    CHECK(w1_len == w2_len && memcmp(w1, w2, w1_len) == 0);
    bspy_round_trip(&p, w1, w1_len);
    fuzz_all_writers(&p);
    free(w1);
    free(w2);
    bs_profile_free(&p);
    bs_profile_free(&q);
    return 0;
}
