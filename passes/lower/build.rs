//! Builds the C++ shim that registers the lowering passes (`remat-place-deallocs`,
//! `remat-lower-stablehlo`) in MLIR's global pass registry, so textual pipelines can name them.

fn main() {
    let prefix = std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    println!("cargo:rerun-if-changed=cpp/register.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    cc::Build::new()
        .cpp(true)
        .file("cpp/register.cpp")
        .include(format!("{prefix}/include"))
        .flag("-std=c++17")
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .define("_GNU_SOURCE", None)
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .warnings(false)
        .compile("remat_lower_register");
}
