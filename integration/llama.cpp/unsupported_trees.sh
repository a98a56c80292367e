# Trees that ggml-kdn.patch applies to but must not go into (sourced by apply_and_build.sh and check_patch.sh).
#
# A state-gather elision: the tree's graph walk skips the get_rows(ssm_states_all, s_copy) node that fills the
# op's state source (src[5]) when GATED_DELTA_NET is its only consumer, and the tree's own GDN kernel reads the
# cache rows through the gather's indices instead. The patch's hook runs before that kernel and hands libkdn
# src[5]->data, a buffer nothing wrote that step: a wrong state with no error, and nothing in the op's parameters
# shows it. Such a tree defines the predicate that decides the skip, ggml_cuda_gdn_state_gather_elidable
# (a gfx906 fork, llamacpp-gfx906-furnace, declares it in src/ggml-cuda/gated_delta_net.cuh).
kdn_elision_symbol=ggml_cuda_gdn_state_gather_elidable

# kdn_state_gather_elision GGML_DIR: prints the first file under GGML_DIR/src/ggml-cuda that names the predicate
# (nothing, status 1, when none does)
kdn_state_gather_elision() {
    grep -l -s -w "$kdn_elision_symbol" "$1"/src/ggml-cuda/*.cu "$1"/src/ggml-cuda/*.cuh | head -n 1 | grep .
}

# kdn_state_gather_elision_message GGML_DIR FILE: why such a tree is refused
kdn_state_gather_elision_message() {
    echo "$1 elides the recurrent-state gather (${2#"$1"/} names $kdn_elision_symbol): its graph walk skips the
  get_rows node that fills GATED_DELTA_NET's state source and its kernel reads the cache rows through the indices,
  so libkdn, asked first, would read a state source never written. Such trees are not supported
  (integration/llama.cpp/README.md, \"Which trees\")."
}
