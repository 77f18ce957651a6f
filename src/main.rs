fn main() {
    let cli: signage::cli::Cli = argh::from_env();
    let code = signage::cli::run(cli);
    // Buffered log lines are written before the process ends.
    signage::telemetry::flush();
    std::process::exit(code);
}
