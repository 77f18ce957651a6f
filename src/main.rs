fn main() {
    let cli: signage::cli::Cli = argh::from_env();
    std::process::exit(signage::cli::run(cli));
}
