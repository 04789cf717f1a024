/* palette.c — frame colours (see palette.h).
 *
 * A 32-bit FNV-1a hash of the name picks the shade, so colours are stable
 * across runs, graphs and machines. Which modules count as OTP or as the
 * Elixir standard library is a built-in list: exact module names for the
 * core applications (erts, kernel, stdlib, compiler) and name prefixes for
 * the module families of the rest. */
#include "palette.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Sorted (strcmp order): bsearch looks modules up. */
static const char *const OTP_MODULES[] = {
    "application", "array", "atomics", "auth", "base64", "binary", "c", "calendar", "cerl", "code",
    "compile", "counters", "cover", "cprof", "crypto", "dbg", "dets", "dict", "digraph", "epp",
    "eprof", "erlang", "erpc", "error_handler", "error_logger", "escript", "ets", "eunit", "eval_bits",
    "file", "filelib", "filename", "fprof", "gen", "global", "group", "heart", "httpc", "inet",
    "init", "io", "io_lib", "kernel", "lists", "maps", "math", "mnesia", "ms_transform", "net",
    "net_adm", "net_kernel", "observer", "orddict", "ordsets", "os", "peer", "persistent_term", "pg",
    "pool", "proc_lib", "proplists", "public_key", "qlc", "queue", "ram_file", "rand", "random", "re",
    "rpc", "seq_trace", "sets", "shell", "slave", "socket", "sofs", "ssh", "ssl", "standard_error",
    "string", "supervisor", "supervisor_bridge", "sys", "timer", "ttb", "unicode", "unicode_util",
    "uri_string", "user", "user_drv", "zip", "zlib",
};

static const char *const OTP_PREFIXES[] = {
    "application_", "asn1", "beam_", "cerl_", "code_", "core_", "crypto_", "ct_", "dets_", "diameter",
    "digraph_", "disk_log", "dist_", "dtls_", "edlin", "erl_", "erts_", "eunit_", "file_", "gb_",
    "gen_", "global_", "group_", "http_", "httpc_", "httpd", "inet6_", "inet_", "io_lib_", "local_",
    "logger", "megaco", "mnesia_", "observer_", "prim_", "pubkey_", "raw_file_io", "snmp", "socket_",
    "ssh_", "ssl_", "sys_", "test_server", "tls_", "v3_", "wx_", "wxe_", "xmerl",
};

/* First segments of Elixir standard-library modules (Enum.map/2 -> Enum). */
static const char *const ELIXIR_MODULES[] = {
    "Access", "Agent", "Application", "ArgumentError", "ArithmeticError", "Atom", "BadArityError",
    "BadBooleanError", "BadFunctionError", "BadMapError", "BadStructError", "Base", "Behaviour",
    "Bitwise", "Calendar", "CaseClauseError", "Code", "Collectable", "CompileError",
    "CondClauseError", "Config", "Date", "DateTime", "Dict", "DynamicSupervisor", "EEx", "Enum",
    "Enumerable", "ErlangError", "ExUnit", "Exception", "File", "Float", "Function",
    "FunctionClauseError", "GenEvent", "GenServer", "HashDict", "HashSet", "IEx", "IO", "Inspect",
    "Integer", "JSON", "Kernel", "KeyError", "Keyword", "List", "Logger", "Macro", "Map", "MapSet",
    "MatchError", "Mix", "Module", "NaiveDateTime", "Node", "OptionParser", "PartitionSupervisor",
    "Path", "Port", "Process", "Protocol", "Range", "Record", "Regex", "Registry", "RuntimeError",
    "Set", "Stream", "String", "StringIO", "Supervisor", "System", "SystemLimitError", "Task", "Time",
    "TokenMissingError", "TryClauseError", "Tuple", "URI", "UndefinedFunctionError",
    "UnicodeConversionError", "Version", "WithClauseError",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int in_sorted(const char *const *list, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(list[mid], s, len);
        if (c == 0 && list[mid][len] != '\0')
            c = 1; /* list entry is longer than s */
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int has_prefix(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return n <= len && memcmp(s, prefix, n) == 0;
}

/* Kind of an Erlang module name (e.g. "lists", "Elixir.Enum"). */
static bs_code_kind kind_of_module(const char *m, size_t len)
{
    static const char elixir[] = "Elixir.";
    if (has_prefix(m, len, elixir)) {
        const char *seg = m + strlen(elixir);
        const char *dot = memchr(seg, '.', len - strlen(elixir));
        size_t seg_len = dot ? (size_t)(dot - seg) : len - strlen(elixir);
        return in_sorted(ELIXIR_MODULES, COUNT(ELIXIR_MODULES), seg, seg_len) ? BS_CODE_ELIXIR : BS_CODE_USER;
    }
    if ((len == 6 && memcmp(m, "elixir", 6) == 0) || has_prefix(m, len, "elixir_"))
        return BS_CODE_ELIXIR; /* Elixir's compiler and runtime are Erlang modules */
    if (in_sorted(OTP_MODULES, COUNT(OTP_MODULES), m, len))
        return BS_CODE_OTP;
    for (size_t i = 0; i < COUNT(OTP_PREFIXES); i++)
        if (has_prefix(m, len, OTP_PREFIXES[i]))
            return BS_CODE_OTP;
    return BS_CODE_USER;
}

/* Length of a quoted atom's text starting after the opening quote. */
static size_t quoted_len(const char *s)
{
    size_t i = 0;
    while (s[i] && s[i] != '\'')
        i += (s[i] == '\\' && s[i + 1]) ? 2 : 1;
    return i;
}

bs_code_kind bs_code_kind_of(const char *name)
{
    if (strcmp(name, "SLEEP") == 0 || strcmp(name, "WAIT") == 0)
        return BS_CODE_SLEEP;
    if (strcmp(name, "RUNNABLE") == 0)
        return BS_CODE_RUNNABLE;
    if (strcmp(name, "GC") == 0)
        return BS_CODE_GC;
    if (name[0] == '<')
        return BS_CODE_PROCESS;
    if (name[0] == '[' && name[strlen(name) - 1] == ']')
        return BS_CODE_SPAN;
    if (name[0] == '\'') /* 'Elixir.Foo':bar/1 */
        return kind_of_module(name + 1, quoted_len(name + 1));
    if (name[0] == ':') /* Elixir spelling of an Erlang module: :lists.sort/1 */
        return kind_of_module(name + 1, strcspn(name + 1, "."));
    if (name[0] >= 'A' && name[0] <= 'Z') { /* Enum.map/2, Elixir.Enum.map/2 */
        size_t seg = strcspn(name, ".:/");
        if (seg == 6 && memcmp(name, "Elixir", 6) == 0 && name[6] == '.')
            return kind_of_module(name, 7 + strcspn(name + 7, ".:/"));
        return in_sorted(ELIXIR_MODULES, COUNT(ELIXIR_MODULES), name, seg) ? BS_CODE_ELIXIR : BS_CODE_USER;
    }
    return kind_of_module(name, strcspn(name, ":"));
}

/* HSL (h in degrees, s and l in [0,1]) to 8-bit RGB. */
static void hsl_rgb(double h, double s, double l, int rgb[3])
{
    double c = (1.0 - (2.0 * l > 1.0 ? 2.0 * l - 1.0 : 1.0 - 2.0 * l)) * s;
    double hp = h / 60.0;
    double hmod = hp - 2.0 * (double)(int)(hp / 2.0);
    double x = c * (1.0 - (hmod > 1.0 ? hmod - 1.0 : 1.0 - hmod));
    double r = 0, g = 0, b = 0;
    switch ((int)hp % 6) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
    }
    double m = l - c / 2.0;
    rgb[0] = (int)((r + m) * 255.0 + 0.5);
    rgb[1] = (int)((g + m) * 255.0 + 0.5);
    rgb[2] = (int)((b + m) * 255.0 + 0.5);
}

/* flamegraph.pl's "hot" ranges: r 205-255, g 0-230, b 0-55. */
static void hot_rgb(uint32_t h, int rgb[3])
{
    rgb[0] = 205 + (int)(50 * ((h >> 16) & 0xFF) / 255);
    rgb[1] = (int)(230 * (h & 0xFF) / 255);
    rgb[2] = (int)(55 * ((h >> 8) & 0xFF) / 255);
}

/* Telemetry span frames: teal in every palette, told apart from code. */
static void span_rgb(uint32_t h, int rgb[3])
{
    rgb[0] = 40 + (int)(30 * (h & 0xFF) / 255);
    rgb[1] = 160 + (int)(40 * ((h >> 8) & 0xFF) / 255);
    rgb[2] = 170 + (int)(40 * ((h >> 16) & 0xFF) / 255);
}

static void beam_rgb(bs_code_kind kind, uint32_t h, int rgb[3])
{
    double v1 = (double)(h & 0xFF) / 255.0, v2 = (double)((h >> 8) & 0xFF) / 255.0;
    switch (kind) {
    case BS_CODE_OTP: hsl_rgb(200.0 + 30.0 * v1, 0.55 + 0.2 * v2, 0.62, rgb); break;
    case BS_CODE_ELIXIR: hsl_rgb(265.0 + 25.0 * v1, 0.45 + 0.2 * v2, 0.68, rgb); break;
    case BS_CODE_SLEEP: rgb[0] = 190, rgb[1] = 200, rgb[2] = 215; break;
    case BS_CODE_RUNNABLE: rgb[0] = 215, rgb[1] = 200, rgb[2] = 190; break;
    case BS_CODE_GC: hsl_rgb(95.0 + 20.0 * v1, 0.55, 0.55, rgb); break;
    case BS_CODE_PROCESS: rgb[0] = rgb[1] = rgb[2] = 200 + (int)(20 * v1); break;
    case BS_CODE_SPAN: span_rgb(h, rgb); break;
    case BS_CODE_USER: default: hot_rgb(h, rgb); break;
    }
}

void bs_palette_fill(bs_palette palette, const char *name, int is_process, char *buf, size_t cap)
{
    int rgb[3];
    uint32_t h = name_hash(name);
    if (palette == BS_PALETTE_BEAM)
        beam_rgb(is_process ? BS_CODE_PROCESS : bs_code_kind_of(name), h, rgb);
    else if (!is_process && bs_code_kind_of(name) == BS_CODE_SPAN)
        span_rgb(h, rgb);
    else
        hot_rgb(h, rgb);
    snprintf(buf, cap, "rgb(%d,%d,%d)", rgb[0], rgb[1], rgb[2]);
}

void bs_palette_diff(double before, double after, char *buf, size_t cap)
{
    double big = before > after ? before : after;
    double change = big > 0 ? (after - before) / big : 0; /* in [-1, 1] */
    int fade = 255 - (int)(205.0 * (change < 0 ? -change : change) + 0.5);
    if (change > 0)
        snprintf(buf, cap, "rgb(255,%d,%d)", fade, fade);
    else if (change < 0)
        snprintf(buf, cap, "rgb(%d,%d,255)", fade, fade);
    else
        snprintf(buf, cap, "rgb(255,255,255)");
}
