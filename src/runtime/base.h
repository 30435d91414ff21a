/* ==== tpace runtime, base part (shipped by the translator; the same for every program and target) ====
 * The clock and the array dump that `tpace run` uses to compare a translation
 * with the sequential program (the reference build has only this part).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double tpace_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Set on MPI ranks but 0: only rank 0 writes the dump. */
static int tpace_dump_off = 0;

/* Append one array to the file named by TPACE_DUMP (nothing when unset):
 * a text line "name elem_bytes rank lo n lo n ..." and the raw elements. */
static void tpace_dump(const char *name, const void *data, unsigned long elem, int rank, const long *lo,
                       const long *n)
{
    const char *path = getenv("TPACE_DUMP");
    if (path == NULL || *path == '\0' || tpace_dump_off)
        return;
    FILE *f = fopen(path, "ab");
    if (f == NULL) {
        fprintf(stderr, "tpace: cannot open TPACE_DUMP file %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t count = 1;
    fprintf(f, "%s %lu %d", name, elem, rank);
    for (int d = 0; d < rank; d++) {
        fprintf(f, " %ld %ld", lo[d], n[d]);
        count *= (size_t)n[d];
    }
    fputc('\n', f);
    if (fwrite(data, elem, count, f) != count || fclose(f) != 0) {
        fprintf(stderr, "tpace: cannot write TPACE_DUMP file %s\n", path);
        exit(2);
    }
}
/* In place of an array the translated program does not bring back after its pipeline
 * (the program never reads it there): the header line of tpace_dump with the word
 * "unread" at its end and no elements, so that a comparison knows to skip it. */
__attribute__((unused)) static void tpace_dump_unread(const char *name, unsigned long elem, int rank, const long *lo, const long *n)
{
    const char *path = getenv("TPACE_DUMP");
    if (path == NULL || *path == '\0' || tpace_dump_off)
        return;
    FILE *f = fopen(path, "ab");
    if (f == NULL) {
        fprintf(stderr, "tpace: cannot open TPACE_DUMP file %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fprintf(f, "%s %lu %d", name, elem, rank);
    for (int d = 0; d < rank; d++)
        fprintf(f, " %ld %ld", lo[d], n[d]);
    if (fputs(" unread\n", f) == EOF || fclose(f) != 0) {
        fprintf(stderr, "tpace: cannot write TPACE_DUMP file %s\n", path);
        exit(2);
    }
}
/* ==== end of tpace runtime, base part ==== */
