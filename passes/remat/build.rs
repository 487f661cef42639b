//! Builds the C++ shim that registers the `remat` pass in MLIR's global pass registry, so a
//! textual pipeline (`func.func(remat{strategy=greedy})`) can name it. The C API cannot.

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
        .compile("remat_register");
}
