/*
 * llama.cpp's own quantizer, for golden data: a tiny command-line wrapper around the prebuilt
 * libggml-base / libllama that node-llama-cpp ships (see scripts/golden-quant.ts, which builds and runs it).
 *
 *   ggml-ref chunk TYPE N_PER_ROW IN.f32 OUT.q OUT.f32   ggml_quantize_chunk (no imatrix), then to_float
 *   ggml-ref model IN.gguf OUT.gguf FTYPE BACKEND_DIR [pure]   llama_model_quantize (llama-quantize)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-backend.h"
#include "llama.h"

static void * read_all(const char * path, size_t * size) {
    FILE * f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    *size = (size_t) ftell(f);
    fseek(f, 0, SEEK_SET);
    void * buf = malloc(*size ? *size : 1);
    if (fread(buf, 1, *size, f) != *size) { perror(path); exit(1); }
    fclose(f);
    return buf;
}

static void write_all(const char * path, const void * buf, size_t size) {
    FILE * f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, size, f) != size) { perror(path); exit(1); }
    fclose(f);
}

int main(int argc, char ** argv) {
    if (argc == 7 && strcmp(argv[1], "chunk") == 0) {
        const enum ggml_type type = (enum ggml_type) atoi(argv[2]);
        const int64_t n_per_row = atoll(argv[3]);
        size_t size;
        float * src = read_all(argv[4], &size);
        const int64_t n = (int64_t) (size / sizeof(float));
        const int64_t nrows = n / n_per_row;
        const size_t qsize = ggml_row_size(type, n_per_row) * (size_t) nrows;
        void * q = malloc(qsize);
        const size_t got = ggml_quantize_chunk(type, src, q, 0, nrows, n_per_row, NULL);
        if (got != qsize) { fprintf(stderr, "size %zu != %zu\n", got, qsize); return 1; }
        write_all(argv[5], q, qsize);
        float * deq = malloc(sizeof(float) * (size_t) n);
        ggml_get_type_traits(type)->to_float(q, deq, n);
        write_all(argv[6], deq, sizeof(float) * (size_t) n);
        return 0;
    }
    if ((argc == 6 || argc == 7) && strcmp(argv[1], "model") == 0) {
        ggml_backend_load_all_from_path(argv[5]);
        llama_model_quantize_params p = llama_model_quantize_default_params();
        p.ftype = (enum llama_ftype) atoi(argv[4]);
        p.nthread = 1;
        p.pure = argc == 7 && strcmp(argv[6], "pure") == 0;
        return (int) llama_model_quantize(argv[2], argv[3], &p);
    }
    fprintf(stderr, "usage: ggml-ref chunk TYPE N_PER_ROW IN.f32 OUT.q OUT.f32 | model IN OUT FTYPE BACKEND_DIR [pure]\n");
    return 2;
}
