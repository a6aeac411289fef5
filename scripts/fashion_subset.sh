#!/bin/sh
# Usage: scripts/fashion_subset.sh DATA OUT N
# Writes into OUT the Fashion-MNIST training set whole (so the shuffled
# batches are those of a full run) and the first N test images and labels,
# all as plain IDX files (NO_ZLIB builds read them). DATA holds the four
# IDX files, gzipped or not. Used where evaluating all 10000 test images
# would take too long: the portability matrix under qemu, the OpenCL golden
# run under PoCL. Exit status is non-zero if a file came out short.
set -eu
data=$1 out=$2 n=$3
mkdir -p "$out"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte; do
    if [ -f "$data/$f" ]; then cp "$data/$f" "$out/$f"; else gzip -dc "$data/$f.gz" > "$out/$f"; fi
done
be=$(printf '\\%03o\\%03o\\%03o\\%03o' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))
src_img="$data/t10k-images-idx3-ubyte" src_lab="$data/t10k-labels-idx1-ubyte"
{ printf "\\000\\000\\010\\003$be\\000\\000\\000\\034\\000\\000\\000\\034"
  if [ -f "$src_img" ]; then cat "$src_img"; else gzip -dc "$src_img.gz"; fi | tail -c +17 | head -c $((n * 784))
} > "$out/t10k-images-idx3-ubyte"
{ printf "\\000\\000\\010\\001$be"
  if [ -f "$src_lab" ]; then cat "$src_lab"; else gzip -dc "$src_lab.gz"; fi | tail -c +9 | head -c "$n"
} > "$out/t10k-labels-idx1-ubyte"
[ "$(wc -c < "$out/t10k-images-idx3-ubyte")" -eq $((16 + n * 784)) ] &&
    [ "$(wc -c < "$out/t10k-labels-idx1-ubyte")" -eq $((8 + n)) ]
