# Capture path 5, cudaGetDriverEntryPoint, ...ByVersion and their _ptsz
# exports with cudaEnableDefault / LegacyStream / PerThreadDefaultStream:
# the functions handed out are traced as the variant asked for.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
untraced "$PROGS/paths_entry" >"$T/plain.txt"
traced entry "$PROGS/paths_entry" >"$T/traced.txt"
soft diff -u "$T/plain.txt" "$T/traced.txt"
soft expect_eq failing_calls "$(grep -c 'call .* rc=[1-9]' "$T/traced.txt")" 0
analyze r "$(dump_of entry)"
E=$T/r.events
check_facts r \
	"apis=cuMemAllocAsync:7/0 cuMemAllocAsync_ptsz:6/0 cuMemAlloc_v2:4/0 cuMemFreeAsync:7/0 cuMemFreeAsync_ptsz:6/0 cuMemFree_v2:4/0 cuStreamCreate:1/0 cuStreamDestroy_v2:1/0 cuStreamSynchronize:4/0 cuStreamSynchronize_ptsz:4/0" \
	allocations=17 frees=17 failed_calls=0 unmatched_frees=0 leaks.count=0
soft expect_eq runtime_layer_events "$(awk '$2 != 2' "$E" | wc -l)" 0
# Per lookup function, flags Default, Legacy, PerThread (L legacy, P _ptsz):
#   EntryPoint L L P, _ptsz P L P, ByVersion L L P, ByVersion_ptsz P L P;
# then one legacy allocation on a created stream.
variants() { sed 's/^cuMem\(Alloc\|Free\)Async_ptsz:0x2$/P/; s/^cuMem\(Alloc\|Free\)Async:0x0$/L/; s/^cuMem\(Alloc\|Free\)Async:0x[0-9a-f]*$/S/'; }
soft expect_eq async_alloc_variants \
	"$(awk '$1 ~ /^cuMemAllocAsync/ { print $1 ":" $3 }' "$E" | variants | tr '\n' ' ')" \
	"L L P P L P L L P P L P S "
soft expect_eq async_free_variants \
	"$(awk '$1 ~ /^cuMemFreeAsync/ { print $1 ":" $3 }' "$E" | variants | tr '\n' ' ')" \
	"L L P P L P L L P P L P S "
# Loop: EntryPoint, _ptsz, ByVersion, ByVersion_ptsz with Default; then the
# probe: PerThread, ByVersion_ptsz Default, ByVersion Legacy, _ptsz Legacy.
soft expect_eq sync_sequence "$(awk '$1 ~ /Synchronize/ { printf "%s:%s ", $1, $3 }' "$E")" \
	"cuStreamSynchronize:0x0 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize:0x0 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize:0x0 cuStreamSynchronize:0x0 "
finish
