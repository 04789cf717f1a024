/* fuzz_bspy.c — libFuzzer target for the .bspy reader.
 *
 * Any input either fails with a message and an offset inside the input, or
 * gives a well-formed profile (fuzz_common.h) that every writer accepts and
 * that writes back to a .bspy file reading back to the same profile, byte
 * for byte the second time. Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
 * the reader accepts a stored checksum of zero (scripts/fuzz.sh makes such
 * seeds), so inputs the fuzzer mutates still get through whole, while real
 * checksums (those the writer makes in the round trips) are checked. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bs_profile p, q;
    bs_read_error e;
    FILE *in = fuzz_open(data, size);
    int rc = bs_read_bspy(in, "fuzz.bspy", &p, &e);
    fclose(in);
    if (rc != 0) {
        fuzz_check_error(&e);
        CHECK(e.line == 0 && e.offset <= size);
        return 0;
    }
    fuzz_check_profile(&p);
    size_t len, len2;
    char *bytes = fuzz_write(bs_write_bspy, &p, &len);
    in = fuzz_open((const uint8_t *)bytes, len);
    CHECK(bs_read_bspy(in, "again.bspy", &q, &e) == 0);
    fclose(in);
    char *again = fuzz_write(bs_write_bspy, &q, &len2);
    CHECK(len == len2 && memcmp(bytes, again, len) == 0);
    fuzz_all_writers(&p);
    free(bytes);
    free(again);
    bs_profile_free(&p);
    bs_profile_free(&q);
    return 0;
}
