/* test-util.h — what several test programs share. */
#pragma once

/* Removes path: a file, or a directory and everything under it (symlinks are unlinked, never
 * followed). Missing paths are fine. */
void ts_test_remove_tree(const char *path);
