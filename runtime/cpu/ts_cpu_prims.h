/* ts_cpu_prims.h — placeholder */
