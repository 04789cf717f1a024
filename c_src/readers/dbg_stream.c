/* dbg_stream.c — walks the trace messages of several dbg trace-port files
 * as one stream: records (dbg_records.c), each term decoded with the
 * hostile-input decoder of c_src/dist/eterm.c (a term that does not decode
 * is an error at its byte offset: the record's own offset plus where in
 * the term the decoder stopped), then classified (dbg_event.c). */
#include "dbg_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "read_source.h"

int bs_dbg_each_event(char *const *paths, int n, const bs_dbg_opts *o, bs_dbg_visit visit, void *ctx,
                      bs_read_error *err)
{
    for (int i = 0; i < n; i++) {
        FILE *fp = fopen(paths[i], "rb");
        if (!fp)
            return bs_read_fail(err, paths[i], 0, 0, "cannot open: %s", strerror(errno));
        bs_dbg_records r;
        bs_dbg_records_init(&r, fp, paths[i], o->max_term_bytes);
        int rc = 0;
        for (;;) {
            bs_dbg_record rec;
            if (bs_dbg_next_record(&r, &rec, err) < 0) {
                rc = -1;
                break;
            }
            if (rec.kind == BS_DBG_REC_EOF)
                break;
            if (rec.kind != BS_DBG_REC_TERM) {
                if (visit(ctx, paths[i], &rec, NULL, err) < 0) {
                    rc = -1;
                    break;
                }
                continue;
            }
            if (rec.size > (uint32_t)INT32_MAX) {
                rc = bs_read_fail(err, paths[i], 0, rec.offset, "a term of %u bytes is too large", rec.size);
                break;
            }
            bs_eterm_tree *tree = NULL;
            char msg[200];
            int index = 0;
            if (bs_eterm_decode_versioned((const char *)rec.body, (int)rec.size, &index, &tree, msg, sizeof msg) < 0) {
                int at = 0;
                const char *why = msg;
                if (sscanf(msg, "offset %d: ", &at) == 1 && strchr(msg, ':'))
                    why = strchr(msg, ':') + 2;
                rc = bs_read_fail(err, paths[i], 0, rec.offset + BS_DBG_RECORD_HEADER + (uint64_t)(at > 0 ? at : 0),
                                  "corrupt trace term (record at byte %llu): %s", (unsigned long long)rec.offset, why);
                break;
            }
            if ((uint32_t)index != rec.size) {
                bs_eterm_free(tree);
                rc = bs_read_fail(err, paths[i], 0, rec.offset + BS_DBG_RECORD_HEADER + (uint64_t)index,
                                  "corrupt record at byte %llu: %u bytes left after its term",
                                  (unsigned long long)rec.offset, rec.size - (uint32_t)index);
                break;
            }
            bs_dbg_event ev;
            bs_dbg_classify(bs_eterm_root(tree), &ev);
            rc = visit(ctx, paths[i], &rec, &ev, err);
            bs_eterm_free(tree);
            if (rc < 0)
                break;
        }
        bs_dbg_records_free(&r);
        fclose(fp);
        if (rc < 0)
            return -1;
    }
    return 0;
}
