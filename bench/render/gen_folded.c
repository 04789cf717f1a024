/* gen_folded.c — synthetic BEAM-like folded stacks for bench/render.
 *
 *   gen_folded --lines N --mode few|unique [--pool 3000] [--seed 1]
 *              [--min-depth 5] [--max-depth 40] [--pid-root]   > out.folded
 *
 * The same shape as the viewer harness's gen-folded.js (same PRNG, tables
 * and walk, so the same seed gives the same stacks): frames `mod:fun/arity`
 * and `Elixir.App.Mod:fun/2` from a random call graph of 2,000 functions
 * under a few OTP entry points, depth min..max. Mode few draws every line
 * (Zipf-like) from a pool of --pool distinct stacks, as a tracer printing
 * one line per sample does; mode unique makes a fresh walk per line, so
 * almost every line is a distinct stack. Counts are 1..100, mostly small.
 * Written in C because the benchmark needs half a gigabyte of it quickly. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ERL_MODS[] = {
    "gen_server", "gen_statem", "proc_lib", "lists", "maps", "ets", "erlang", "io_lib",
    "io_lib_format", "unicode", "binary", "string", "timer", "gen", "supervisor", "application_master",
    "ssl_gen_statem", "tls_sender", "inet_tcp", "prim_inet", "gen_tcp", "jsx_decoder", "jsone_encode",
    "cowboy_stream_h", "cowboy_handler", "cowboy_http", "ranch_conn_sup", "ranch_tcp", "hackney",
    "telemetry", "logger", "logger_backend", "mnesia_tm", "mnesia_lib", "dets", "zlib", "crypto",
    "public_key", "erl_eval", "rabbit_channel", "rabbit_amqqueue", "rabbit_msg_store", "ra_server",
    "emqx_channel", "emqx_broker", "riak_kv_vnode", "ecto_sql", "poolboy", "rpc", "global"};
static const char *const EX_MODS[] = {
    "Elixir.Enum", "Elixir.Stream", "Elixir.Map", "Elixir.Keyword", "Elixir.String",
    "Elixir.Jason.Encode", "Elixir.Jason.Decoder", "Elixir.Ecto.Repo.Queryable", "Elixir.Ecto.Adapters.SQL",
    "Elixir.DBConnection", "Elixir.Postgrex.Protocol", "Elixir.Phoenix.Endpoint", "Elixir.Phoenix.Router",
    "Elixir.Plug.Conn", "Elixir.Plug.Parsers", "Elixir.MyApp.Accounts", "Elixir.MyApp.Billing.Invoice",
    "Elixir.MyApp.Workers.Importer", "Elixir.Broadway.Topology.ProcessorStage", "Elixir.GenStage",
    "Elixir.Task.Supervised", "Elixir.Finch.HTTP1.Conn", "Elixir.Mint.HTTP1", "Elixir.Absinthe.Phase"};
static const char *const FUNS[] = {
    "handle_call", "handle_cast", "handle_info", "loop", "init", "do_apply", "decode", "encode",
    "map", "foldl", "foldr", "filter", "lookup", "insert", "select", "send", "recv", "parse", "format",
    "execute", "run", "call", "reduce", "each", "flat_map", "update", "get", "put", "fetch", "merge",
    "to_binary", "from_binary", "process_item", "handle_event", "dispatch", "match", "compile",
    "-handle_call/3-fun-0-", "-loop/1-lc$^0/1-0-", "query", "checkout", "checkin", "serialize"};
static const char *const ROOTS[][4] = {
    {"proc_lib:init_p_do_apply/3", "gen_server:loop/7", "gen_server:decode_msg/9", "gen_server:handle_msg/6"},
    {"proc_lib:init_p_do_apply/3", "gen_statem:loop_state_callback/11"},
    {"proc_lib:init_p_do_apply/3", "cowboy_stream_h:request_process/3", "cowboy_stream_h:execute/3"},
    {"erlang:apply/2", "Elixir.Task.Supervised:invoke_mfa/2"},
    {"proc_lib:init_p/5", "Elixir.GenStage:handle_info/2"},
    {"erts_code_purger:wait_for_request/0"},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define N_FUNS 2000
#define MAX_CALLEES 8

typedef struct opts {
    long lines, pool, seed, min_depth, max_depth;
    int few, pid_root;
} opts;

/* mulberry32, as gen-folded.js computes it */
static double rnd(uint32_t *a)
{
    *a += 0x6D2B79F5u;
    uint32_t t = *a;
    t = (t ^ (t >> 15)) * (1u | t);
    t = (t + ((t ^ (t >> 7)) * (61u | t))) ^ t;
    return (double)(t ^ (t >> 14)) / 4294967296.0;
}

static size_t pick(uint32_t *r, size_t n) { return (size_t)floor(rnd(r) * (double)n); }

typedef struct graph {
    char names[N_FUNS][64];
    int n_callees[N_FUNS];
    int callees[N_FUNS][MAX_CALLEES];
} graph;

static void make_graph(uint32_t *r, graph *g)
{
    for (int n = 0; n < N_FUNS;) {
        const char *m = rnd(r) < 0.6 ? ERL_MODS[pick(r, N(ERL_MODS))] : EX_MODS[pick(r, N(EX_MODS))];
        const char *f = FUNS[pick(r, N(FUNS))];
        snprintf(g->names[n], sizeof g->names[n], "%s:%s/%zu", m, f, pick(r, 6));
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) /* 2,000^2/2 compares, once */
            dup = strcmp(g->names[i], g->names[n]) == 0;
        n += !dup;
    }
    for (int n = 0; n < N_FUNS; n++) {
        g->n_callees[n] = 3 + (int)pick(r, 6);
        for (int i = 0; i < g->n_callees[n]; i++)
            g->callees[n][i] = (int)pick(r, N_FUNS);
    }
}

/* One random walk, written into buf; returns its length. */
static size_t walk(uint32_t *r, const graph *g, const opts *o, char *buf)
{
    size_t root = pick(r, N(ROOTS)), len = 0;
    long depth = o->min_depth + (long)pick(r, (size_t)(o->max_depth - o->min_depth + 1)), k = 0;
    if (o->pid_root)
        len += (size_t)sprintf(buf + len, "<0.%zu.0>", 100 + pick(r, 400)), k++;
    for (int i = 0; i < 4 && ROOTS[root][i] && k < depth; i++, k++)
        len += (size_t)sprintf(buf + len, "%s%s", k ? ";" : "", ROOTS[root][i]);
    int cur = (int)pick(r, 40);
    for (; k < depth; k++) {
        len += (size_t)sprintf(buf + len, ";%s", g->names[cur]);
        cur = g->callees[cur][pick(r, (size_t)g->n_callees[cur])];
    }
    return len;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){10000, 3000, 1, 5, 40, 1, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--pid-root") == 0) {
            o->pid_root = 1;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (strcmp(a, "--lines") == 0) o->lines = atol(v);
        else if (strcmp(a, "--mode") == 0 && (strcmp(v, "few") == 0 || strcmp(v, "unique") == 0)) o->few = v[0] == 'f';
        else if (strcmp(a, "--pool") == 0) o->pool = atol(v);
        else if (strcmp(a, "--seed") == 0) o->seed = atol(v);
        else if (strcmp(a, "--min-depth") == 0) o->min_depth = atol(v);
        else if (strcmp(a, "--max-depth") == 0) o->max_depth = atol(v);
        else return -1;
    }
    return o->lines >= 0 && o->pool > 0 && o->min_depth >= 1 && o->max_depth >= o->min_depth &&
                   o->max_depth <= 1000 ? 0 : -1;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: gen_folded --lines N --mode few|unique [--pool 3000] [--seed 1]\n"
                        "                  [--min-depth 5] [--max-depth 40] [--pid-root]\n");
        return 2;
    }
    uint32_t r = (uint32_t)o.seed;
    static graph g;
    make_graph(&r, &g);
    size_t line_cap = (size_t)o.max_depth * 72 + 64;
    char **pool = NULL, *line = malloc(line_cap);
    size_t *pool_len = NULL;
    if (!line)
        return 1;
    if (o.few) {
        pool = malloc((size_t)o.pool * sizeof *pool);
        pool_len = malloc((size_t)o.pool * sizeof *pool_len);
        if (!pool || !pool_len)
            return 1;
        for (long i = 0; i < o.pool; i++) {
            pool_len[i] = walk(&r, &g, &o, line);
            if (!(pool[i] = malloc(pool_len[i])))
                return 1;
            memcpy(pool[i], line, pool_len[i]);
        }
    }
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    for (long i = 0; i < o.lines; i++) {
        const char *s = line;
        size_t len;
        if (o.few) {
            double u = rnd(&r);
            size_t k = (size_t)floor(pow(u, 3) * (double)o.pool);
            s = pool[k], len = pool_len[k];
        } else {
            len = walk(&r, &g, &o, line);
        }
        unsigned count = 1 + (unsigned)floor(pow(rnd(&r), 4) * 100);
        fwrite(s, 1, len, stdout);
        printf(" %u\n", count);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
