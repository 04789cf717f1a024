/* bspy.h — constants of beamspy's own profile file, shared by its writer
 * (bspy_write.c) and reader (bspy_read.c). The format is documented byte by
 * byte in docs/bspy-format.md; change both together, and bump the version
 * when a version-1 reader could misread a new file. */
#ifndef BS_BSPY_H
#define BS_BSPY_H

#define BS_BSPY_MAGIC "\x89" "BSPY\r\n\x1a" /* 8 bytes: survives no text-mode mangling */
#define BS_BSPY_MAGIC_LEN 8
#define BS_BSPY_VERSION 1u
#define BS_BSPY_HEADER_LEN 16u  /* magic, version, flags */
#define BS_BSPY_SECTION_HEAD 12u /* tag, u64 length */

#define BS_BSPY_TAG_META "META"
#define BS_BSPY_TAG_FRAMES "FRAM"
#define BS_BSPY_TAG_TREE "TREE"
#define BS_BSPY_TAG_END "END."
#define BS_BSPY_TAG_COMP "COMP" /* tracer-overhead compensation; optional, after META */
#define BS_BSPY_TAG_NOTE "NOTE" /* the profile's notes (what a reader must know); optional, after META */

#define BS_BSPY_META_TIMELINE 1u           /* META flags */
#define BS_BSPY_META_TIMELINE_TRUNCATED 2u
#define BS_BSPY_TREE_SYNTHETIC_ROOT 1u     /* TREE flags */

#define BS_BSPY_MAX_NAME 65535u  /* bytes of one frame name */
#define BS_BSPY_NODE_BYTES 24u   /* parent u32, frame u32, self u64, calls u64 */
#define BS_BSPY_SPAN_BYTES 20u   /* node u32, start u64, end u64 */
#define BS_BSPY_COMP_KIND_BYTES 12u /* per event kind: ns u32, events u64 */
#define BS_BSPY_COMP_FIXED 32u  /* state u32, subtracted, base, scaled ns u64, kinds u32 */
#define BS_BSPY_COMP_MAX_KINDS 64u
#define BS_BSPY_TREE_FIXED 28u   /* flags u32, events u64, dropped u64, n_nodes u32, n_spans u32 */

#endif
