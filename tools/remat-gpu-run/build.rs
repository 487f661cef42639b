//! A step library's undefined symbols (`mgpu*`, `_mlir_memref_to_llvm_*`, `memrefCopy`,
//! `remat_host_alloc_next`) resolve against this executable when it is `dlopen`ed: export the
//! executable's symbols to the dynamic symbol table.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-arg-bins=-rdynamic");
}
