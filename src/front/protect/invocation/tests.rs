use super::*;

/// The invocation of a command line split on spaces (every word literal).
fn of(line: &str) -> Invocation {
    let mut words = line.split(' ');
    let prog = words.next().unwrap_or_default();
    let args: Vec<Option<String>> = words.map(|w| Some(w.to_string())).collect();
    invocation(prog, &args).unwrap_or_else(|| panic!("{line}: no grammar"))
}

fn program(line: &str) -> Program {
    of(line).program
}

#[test]
fn a_shells_code_is_the_first_operand_after_its_options() {
    let inline = |c: &str| Program::Inline(Some(c.to_string()));
    assert_eq!(program("bash -c ls"), inline("ls"));
    assert_eq!(program("bash -c -e ls x"), inline("ls"));
    assert_eq!(program("bash -c -- ls"), inline("ls"));
    assert_eq!(program("bash -lc ls"), inline("ls"));
    assert_eq!(program("bash -o pipefail -c ls"), inline("ls"));
    assert_eq!(program("bash -c -o pipefail ls"), inline("ls"));
    assert_eq!(program("bash -euo pipefail -c ls"), inline("ls"));
    assert_eq!(program("bash +e -c ls"), inline("ls"));
    assert_eq!(program("bash --rcfile rc -c ls"), inline("ls"));
    assert_eq!(program("fish -c ls"), inline("ls"));
    assert_eq!(program("fish --command=ls"), inline("ls"));
    assert_eq!(program("fish --command ls"), inline("ls"));
    assert_eq!(program("busybox sh -c ls"), inline("ls"));
}

#[test]
fn a_shells_script_and_standard_input() {
    assert_eq!(program("bash x.sh"), Program::Script(0));
    assert_eq!(program("bash -x -- x.sh"), Program::Script(2));
    assert_eq!(program("sh - x.sh"), Program::Script(1));
    assert_eq!(program("bash --rcfile rc x.sh"), Program::Script(2));
    assert_eq!(program("bash -o vi x.sh"), Program::Script(2));
    assert_eq!(program("busybox sh x.sh"), Program::Script(1));
    for stdin in [
        "bash",
        "bash -i",
        "bash -",
        "sh -s x",
        "bash -o vi",
        "zsh -l",
        "fish",
    ] {
        assert_eq!(program(stdin), Program::Stdin, "{stdin}");
    }
    assert_eq!(program("bash --version"), Program::NoneGiven);
}

#[test]
fn python_options_as_cpython_reads_them() {
    assert_eq!(program("python3 -E x.py"), Program::Script(1));
    assert_eq!(program("python3 -I x.py"), Program::Script(1));
    assert_eq!(program("python3 -Wignore x.py"), Program::Script(1));
    assert_eq!(
        program("python3 -W ignore -Xdev -Eu x.py"),
        Program::Script(4)
    );
    assert_eq!(
        program("python3 --check-hash-based-pycs never x.py"),
        Program::Script(2)
    );
    assert_eq!(program("python3 -- x.py"), Program::Script(1));
    assert_eq!(
        program("python3 -cprint(1)"),
        Program::Inline(Some("print(1)".into()))
    );
    assert_eq!(program("python3 -Ic 1"), Program::Inline(Some("1".into())));
    assert_eq!(
        program("python3 -m a.b"),
        Program::Module(Some("a.b".into()))
    );
    assert_eq!(
        program("python3 -Ema.b"),
        Program::Module(Some("a.b".into()))
    );
    for stdin in [
        "python3",
        "python3 -E",
        "python3 -Wdefault",
        "python3 -W ignore -",
    ] {
        assert_eq!(program(stdin), Program::Stdin, "{stdin}");
    }
    assert_eq!(program("python3 -V"), Program::NoneGiven);
    assert_eq!(program("python3.11 --version"), Program::NoneGiven);
    assert!(of("python3 -i x.py").interactive);
}

#[test]
fn node_reads_whole_words_and_loads_files_first() {
    assert_eq!(program("node -e 1"), Program::Inline(Some("1".into())));
    assert_eq!(program("node -pe 1"), Program::Inline(Some("1".into())));
    assert_eq!(program("node --eval=1"), Program::Inline(Some("1".into())));
    assert_eq!(program("node --title x a.js"), Program::Script(2));
    let inv = of("node -r ./pre.js --import=./b.mjs --require c a.js");
    assert_eq!(inv.program, Program::Script(5));
    assert_eq!(
        inv.loads,
        vec![
            Load::File("./pre.js".into()),
            Load::File("./b.mjs".into()),
            Load::Module("c".into())
        ]
    );
    assert_eq!(program("node --test"), Program::NoneGiven);
    assert_eq!(program("node --title x"), Program::Stdin);
}

#[test]
fn perl_and_ruby_clusters_libraries_and_modules() {
    assert_eq!(
        program("perl -ne print f"),
        Program::Inline(Some("print".into()))
    );
    assert_eq!(
        program("perl -le print"),
        Program::Inline(Some("print".into()))
    );
    assert_eq!(
        program("perl -0777 -ne 1"),
        Program::Inline(Some("1".into()))
    );
    assert_eq!(
        program("perl -i.bak -pe 1 f"),
        Program::Inline(Some("1".into()))
    );
    // `-pie`: the `e` is `-i`'s extension, as perl reads it.
    assert_eq!(program("perl -pie x.pl"), Program::Script(1));
    let inv = of("perl -Itools -I lib -MReport -M-strict=x -e 1");
    assert_eq!(inv.lib_dirs, vec!["tools".to_string(), "lib".to_string()]);
    assert_eq!(
        inv.loads,
        vec![Load::Module("Report".into()), Load::Module("strict".into())]
    );
    assert_eq!(program("perl -Mstrict"), Program::Stdin);
    let inv = of("ruby -Itools -rpre -r ./x.rb -E UTF-8 a.rb");
    assert_eq!(inv.program, Program::Script(6));
    assert_eq!(
        inv.loads,
        vec![Load::Module("pre".into()), Load::File("./x.rb".into())]
    );
}

#[test]
fn php_lua_osascript_and_powershell() {
    assert_eq!(program("php -r 1"), Program::Inline(Some("1".into())));
    assert_eq!(program("php -f x.php"), Program::Script(1));
    assert_eq!(program("php -fx.php"), Program::Unknown);
    assert_eq!(program("php -a"), Program::Stdin);
    assert_eq!(
        of("php -d auto_prepend_file=p.php x.php").loads,
        vec![Load::File("p.php".into())]
    );
    assert_eq!(of("php -c my.ini x.php").loads, vec![Load::Unknown]);
    assert_eq!(
        of("lua -l util x.lua").loads,
        vec![Load::Module("util".into())]
    );
    assert_eq!(program("osascript -e 1"), Program::Inline(Some("1".into())));
    assert_eq!(
        program("pwsh -NoProfile -c Get-Item x"),
        Program::Inline(Some("Get-Item x".into()))
    );
    assert_eq!(program("pwsh -ep Bypass -File x.ps1"), Program::Script(3));
    assert_eq!(program("pwsh x.ps1"), Program::Script(0));
    assert_eq!(program("pwsh -ec AAAA"), Program::Inline(None));
    assert_eq!(program("pwsh -NoLogo"), Program::Stdin);
    assert_eq!(program("deno run -A x.ts"), Program::Script(2));
    assert_eq!(program("bun -e 1"), Program::Inline(Some("1".into())));
}

#[test]
fn a_word_that_is_not_literal_is_unknown() {
    let w = |s: &str| Some(s.to_string());
    let args = [w("-x"), None, w("x.sh")];
    assert_eq!(
        invocation("bash", &args).map(|i| i.program),
        Some(Program::Unknown)
    );
    let args = [w("-r"), None, w("-e"), w("1")];
    let inv = invocation("node", &args).unwrap();
    assert_eq!(inv.loads, vec![Load::Unknown]);
    let args = [w("-c"), None];
    assert_eq!(
        invocation("sh", &args).map(|i| i.program),
        Some(Program::Inline(None))
    );
    assert_eq!(invocation("cargo", &[]), None);
}

#[test]
fn module_names_as_files() {
    assert_eq!(
        module_files("python3", "a.b"),
        [
            "a/__init__.py",
            "a/b.py",
            "a/b/__init__.py",
            "a/b/__main__.py"
        ]
    );
    assert_eq!(module_files("perl", "A::B"), ["A/B.pm"]);
    assert_eq!(module_files("ruby", "pre"), ["pre.rb", "pre"]);
    assert!(module_files("python3", "../x").is_empty());
    assert_eq!(module_files("node", "x"), ["x.js", "x/index.js", "x"]);
    assert!(module_files("node", "./x").is_empty());
}

#[test]
fn compilers_and_runtimes_that_run_source() {
    assert_eq!(program("go run main.go"), Program::Script(1));
    assert_eq!(
        program("go run -tags x -race ./cmd/app"),
        Program::Script(4)
    );
    assert_eq!(program("go run -tags=x ."), Program::Script(2));
    assert_eq!(
        of("go run a.go b.go -- x").loads,
        vec![Load::File("b.go".into())]
    );
    assert_eq!(of("go run -exec sudo .").loads, vec![Load::Unknown]);
    assert_eq!(program("go test ./..."), Program::NoneGiven);
    assert_eq!(program("java -cp lib K.java"), Program::Script(2));
    assert_eq!(program("java -jar app.jar"), Program::NoneGiven);
    assert_eq!(program("java com.example.Main"), Program::NoneGiven);
    assert_eq!(program("tsx watch src/x.ts"), Program::Script(1));
    assert_eq!(program("ts-node -e 1"), Program::Inline(Some("1".into())));
    assert_eq!(program("Rscript -e 1"), Program::Inline(Some("1".into())));
    assert_eq!(program("julia -t 4 -- x.jl"), Program::Script(3));
    assert_eq!(program("julia"), Program::Stdin);
    assert_eq!(
        of("julia -L init.jl x.jl").loads,
        vec![Load::File("init.jl".into())]
    );
    assert_eq!(
        of("node -r dotenv/config a.js").loads,
        vec![Load::Module("dotenv/config".into())]
    );
}

/// Attack review 42: only CPython's `-c` ends the options (`python3 --help`); node, perl,
/// ruby and lua go on reading options after code (checked with node v20.20 and perl 5.36).
#[test]
fn code_options_end_the_options_only_where_the_program_says_so() {
    let inline = |c: &str| Program::Inline(Some(c.to_string()));
    let node = of("node -e 1 -r ./pre.js");
    assert_eq!(node.program, inline("1"));
    assert_eq!(node.loads, vec![Load::File("./pre.js".into())]);
    // node runs its last `-e`; perl joins them as lines.
    assert_eq!(program("node -e 1 -e 2"), inline("2"));
    assert_eq!(of("node -e 1 -e 2").code_at, Some(3));
    assert_eq!(program("perl -e 1 -e 2"), inline("1\n2"));
    assert_eq!(of("perl -e 1 -e 2").code_at, None);
    assert_eq!(
        of("perl -e 1 -MReport").loads,
        vec![Load::Module("Report".into())]
    );
    assert!(of("node -e 1 -i").interactive);
    // lua(1): `-e STAT` runs, then the script.
    let lua = of("lua -e x=1 k.lua");
    assert_eq!(lua.program, inline("x=1"));
    assert_eq!(lua.loads, vec![Load::File("k.lua".into())]);
    // CPython: what follows `-c CODE` is its `sys.argv`.
    assert!(!of("python3 -c 1 -i").interactive);
}

#[test]
fn debuggers_test_runners_and_node_values() {
    assert!(of("perl -d -e 1").interactive);
    assert!(of("perl -dt x.pl").interactive);
    assert_eq!(
        of("perl -d:Trace x.pl").loads,
        vec![Load::Module("Devel::Trace".into())]
    );
    assert!(!of("perl -d:Trace x.pl").interactive);
    assert!(of("python3 -m pdb x.py").interactive);
    assert!(of("node inspect x.js").interactive);
    let test = of("node --test a.js b.js");
    assert_eq!(test.program, Program::Script(1));
    assert_eq!(test.loads, vec![Load::File("b.js".into())]);
    assert_eq!(program("node --test"), Program::NoneGiven);
    assert_eq!(program("node --disable-warning X"), Program::Stdin);
    assert_eq!(program("node --input_type commonjs"), Program::Stdin);
}
