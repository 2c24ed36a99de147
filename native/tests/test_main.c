/* test_main.c - runs every C test; last line "N passed, M failed". */
#include <stdlib.h>
#include <string.h>

#include "test.h"

int test_failures;
const char *test_worker_path = "build/boatload-worker";

struct test {
    const char *name;
    void (*fn)(void);
};

#define T(f) {#f, f}
static const struct test tests[] = {
    T(test_hist_bucket_ranges),
    T(test_hist_percentiles),
    T(test_hist_merge_and_moments),
    T(test_shape_parse_good),
    T(test_shape_parse_bad),
    T(test_shape_dirs_limit),
    T(test_shape_names),
    T(test_cli_parse),
    T(test_cli_defaults_and_help),
    T(test_cli_wrap),
    T(test_perm),
    T(test_cli_size),
    T(test_meta_phases_parse),
    T(test_meta_size_parse),
    T(test_meta_layout),
    T(test_meta_order_visits_all_once),
    T(test_split_shares),
    T(test_meta_shares_visit_all_once),
    T(test_meta_file_sizes),
    T(test_rlayout_build),
    T(test_rlayout_deterministic),
    T(test_rlayout_names),
    T(test_filedata_size_parse),
    T(test_filedata_sizes),
    T(test_filedata_content),
    T(test_slot_snapshot_is_consistent),
    T(test_json_escape),
    T(test_json_structure),
    T(test_int_version),
    T(test_int_help),
    T(test_int_counts_and_names),
    T(test_int_random_same_set),
    T(test_int_nonempty_exit2),
    T(test_int_bad_args_exit2),
    T(test_int_long_argument_keeps_reason),
    T(test_int_symlink_dir_not_followed),
    T(test_int_symlink_file_not_followed),
    T(test_int_out_file),
    T(test_int_meta_phases),
    T(test_int_meta_missing_file_exit1),
    T(test_int_meta_sync_end),
    T(test_int_new_workloads_bad_args_exit2),
    T(test_int_seqio_write_read),
    T(test_int_randio_counts),
    T(test_int_tree_random_layout),
    T(test_int_tree_new_bad_args_exit2),
};

int main(int argc, char **argv)
{
    if (argc > 1)
        test_worker_path = argv[1];
    const char *only = argc > 2 ? argv[2] : NULL;
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only && !strstr(tests[i].name, only))
            continue;
        test_failures = 0;
        fprintf(stderr, "%s ...\n", tests[i].name);
        tests[i].fn();
        if (test_failures) {
            printf("FAIL %s (%d failed checks)\n", tests[i].name, test_failures);
            failed++;
        } else {
            printf("ok   %s\n", tests[i].name);
            passed++;
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
