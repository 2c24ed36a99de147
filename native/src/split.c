/* split.c - the "split" object of a workload's params (split.h). */
#include "split.h"

#include "json.h"

void split_write_json(struct json *j, uint64_t ndirs, unsigned threads, split_files_fn files_of, const void *arg)
{
    json_obj_begin(j);
    json_key(j, "by");
    json_str(j, split_by_dirs(ndirs, threads) ? "dirs" : "files");
    json_key(j, "threads");
    json_arr_begin(j);
    for (unsigned t = 0; t < threads; t++) {
        struct split_share sh;
        split_share(ndirs, threads, t, &sh);
        json_obj_begin(j);
        json_key(j, "first_dir");
        json_u64(j, sh.dir_begin);
        json_key(j, "dirs");
        json_u64(j, sh.dir_end - sh.dir_begin);
        json_key(j, "files");
        json_u64(j, files_of(arg, t, &sh));
        json_obj_end(j);
    }
    json_arr_end(j);
    json_obj_end(j);
}
