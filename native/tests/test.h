/* test.h - tiny test harness: CHECK() records a failure and continues. */
#ifndef BOATLOAD_TEST_H
#define BOATLOAD_TEST_H

#include <stdio.h>

extern int test_failures;           /* failed checks in the current test */
extern const char *test_worker_path;/* path of the built boatload-worker */

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                     \
        }                                                                        \
    } while (0)

#define CHECKF(cond, ...)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "  %s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            test_failures++;                                                     \
        }                                                                        \
    } while (0)

/* test_hist.c */
void test_hist_bucket_ranges(void);
void test_hist_percentiles(void);
void test_hist_merge_and_moments(void);
/* test_shape.c */
void test_shape_parse_good(void);
void test_shape_parse_bad(void);
void test_shape_dirs_limit(void);
void test_shape_names(void);
void test_cli_parse(void);
void test_cli_defaults_and_help(void);
void test_cli_wrap(void);
void test_perm(void);
/* test_json.c */
void test_json_escape(void);
void test_json_structure(void);
/* test_integration.c */
void test_int_version(void);
void test_int_help(void);
void test_int_counts_and_names(void);
void test_int_random_same_set(void);
void test_int_nonempty_exit2(void);
void test_int_bad_args_exit2(void);
void test_int_long_argument_keeps_reason(void);
void test_int_symlink_dir_not_followed(void);
void test_int_symlink_file_not_followed(void);
void test_int_out_file(void);
/* test_integration_io.c */
void test_int_meta_phases(void);
void test_int_meta_missing_file_exit1(void);
void test_int_meta_sync_end(void);
void test_int_new_workloads_bad_args_exit2(void);
void test_int_seqio_write_read(void);
void test_int_randio_counts(void);
/* test_integration_tree.c */
void test_int_tree_random_layout(void);
void test_int_tree_new_bad_args_exit2(void);
/* test_meta.c */
void test_cli_size(void);
void test_meta_phases_parse(void);
void test_meta_size_parse(void);
void test_meta_layout(void);
void test_meta_order_visits_all_once(void);
void test_split_shares(void);
void test_meta_shares_visit_all_once(void);
void test_meta_file_sizes(void);
/* test_slot.c */
void test_slot_snapshot_is_consistent(void);
/* test_tree.c */
void test_rlayout_build(void);
void test_rlayout_deterministic(void);
void test_rlayout_names(void);
void test_filedata_size_parse(void);
void test_filedata_sizes(void);
void test_filedata_content(void);

#endif
