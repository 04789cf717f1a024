/* fuzz_roundtrip.c — libFuzzer target for read -> write .bspy -> read.
 *
 * The input is read like bs_read_profile_file reads a file (a .bspy file by
 * its magic bytes, folded text otherwise). Whatever is accepted must be
 * kept whole by beamspy's own format: written as .bspy and read back it is
 * equal in every field (frames in order, every node's parent, frame, self,
 * total and calls, spans, metadata, flags), and writing that copy again
 * gives the same bytes. A seed is either kind of input (fuzz/corpus/). */
#include "fuzz_common.h"

#include "common/bspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bs_profile p, q;
    bs_read_error e;
    int is_bspy = size >= BS_BSPY_MAGIC_LEN && memcmp(data, BS_BSPY_MAGIC, BS_BSPY_MAGIC_LEN) == 0;
    FILE *in = fuzz_open(data, size);
    int rc = is_bspy ? bs_read_bspy(in, "fuzz.bspy", &p, &e) : bs_read_folded(in, "fuzz.folded", &p, &e);
    fclose(in);
    if (rc != 0) {
        fuzz_check_error(&e);
        return 0;
    }
    fuzz_check_profile(&p);
    size_t len, len2;
    char *bytes = fuzz_write(bs_write_bspy, &p, &len);
    in = fuzz_open((const uint8_t *)bytes, len);
    rc = bs_read_bspy(in, "again.bspy", &q, &e);
    fclose(in);
    if (rc != 0) {
        fprintf(stderr, "our own .bspy was refused at offset %llu: %s\n", (unsigned long long)e.offset, e.msg);
        abort();
    }
    fuzz_check_equal(&p, &q);
    char *again = fuzz_write(bs_write_bspy, &q, &len2);
    CHECK(len == len2 && memcmp(bytes, again, len) == 0);
    free(bytes);
    free(again);
    bs_profile_free(&p);
    bs_profile_free(&q);
    return 0;
}
