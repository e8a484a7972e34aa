function __prefs-watch_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __prefs-watch_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __prefs-watch_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __prefs-watch_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __prefs-watch_parse_tokens -S
    set -l unparsed_tokens (__prefs-watch_tokens -pc)
    switch $unparsed_tokens[1]
    case 'prefs-watch'
        __prefs-watch_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'tail'
            __prefs-watch_parse_subcommand -r 1 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'prefix=+' 'key=+' 'json' 'csv' 'since=' 'cursor=' 'format=' '0' 'initial' 'wait' 'c/count=' 't/timeout=' 'backlog=' 'version' 'h/help'
        case 'read'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'json' 'explain' 'version' 'h/help'
        case 'read-type'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'write'
            __prefs-watch_parse_subcommand -r 3 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'create' 'version' 'h/help'
        case 'delete'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'list' 'domains'
            __prefs-watch_parse_subcommand 0 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'find'
            __prefs-watch_parse_subcommand 1 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'export'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'format=' 'version' 'h/help'
        case 'import'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'merge' 'skip-locked' 'create' 'version' 'h/help'
        case 'migrate'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'overwrite' 'create' 'version' 'h/help'
        case 'rename'
            __prefs-watch_parse_subcommand 3 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'edit'
            __prefs-watch_parse_subcommand 2 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'create' 'version' 'h/help'
        case 'locks'
            __prefs-watch_parse_subcommand 1 'group=' 'dir=' 'q/quiet' 'verbose' 'lock-timeout=' 'version' 'h/help'
        case 'help'
            __prefs-watch_parse_subcommand -r 1 'version'
        end
    end
end

function __prefs-watch_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __prefs-watch_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __prefs-watch_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __prefs-watch_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__prefs-watch_tokens -p)
    if test -z "$(__prefs-watch_tokens -t)"
        set -l index (count (__prefs-watch_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'prefs-watch' -f
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'tail' -d 'Print every change of every key as it happens, like inotifywait -m but per key.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'read' -d 'Print a suite (as an XML property list) or one key\'s value.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'read-type' -d 'Print the property-list type of a key\'s value.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'write' -d 'Set a key, through the locked, merged, atomic write path.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'delete' -d 'Remove a key, or every key of a suite.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'list' -d 'List suites: names in a group or directory, or the paths of all suites.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'find' -d 'Print every suite, key and value that contains a word (ignoring case), as defaults find does.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'export' -d 'Write a suite to a property-list file, or to standard output with -.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'import' -d 'Replace a suite\'s values with those of a property-list file (- reads standard input).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'migrate' -d 'Copy a Foundation UserDefaults suite\'s values into a suite, types kept; the UserDefaults file is only read.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'rename' -d 'Rename a key, atomically.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'edit' -d 'Edit a suite (or one key) in $VISUAL or $EDITOR; only the keys you change are written.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'locks' -d 'List the keys a system layer locks in a suite, each with its locks file.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch tail" -ge 1' -fka '(__prefs-watch_custom_completion ---completion tail -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion tail -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail"' -l 'prefix' -d 'Only keys starting with this prefix (repeatable).' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail"' -l 'key' -d 'Only this key (repeatable).' -rfka '(__prefs-watch_custom_completion ---completion tail -- --key (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" json' -l 'json' -d 'JSON Lines: ts, seq (the write\'s number), record, suite, key, op, old, new (and message).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" csv' -l 'csv' -d 'CSV: ts,seq,suite,key,op,old,new,message, quoted as inotifywait does.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" since' -l 'since' -d 'Print every write after this number first (from the suite\'s journal), then follow. One suite.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" cursor' -l 'cursor' -d 'Resume from the number saved in this file, and save there the number of each write once printed. One suite.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" format' -l 'format' -d 'Print each record with these % letters (see below).' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" 0' -s '0' -d 'End records with NUL instead of a newline.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" initial' -l 'initial' -d 'Print the current values first (operation initial); with --cursor, when the file does not exist yet.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" wait' -l 'wait' -d 'Wait for a named suite, or the --group or --dir directory, that does not exist yet (without it, that is an error). A --dir directory that is empty or holds only Library is waited for until it shows whether it is a container.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" c count' -s 'c' -l 'count' -d 'Exit with 0 after this many records.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" t timeout' -s 't' -l 'timeout' -d 'Exit with 2 when no record arrives for this many seconds.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" backlog' -l 'backlog' -d 'Output held for a reader that falls behind, in bytes (K, M and G suffixes); past it, changes of a key are merged.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch tail" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion read -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch read" -eq 1' -fka '(__prefs-watch_custom_completion ---completion read -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch read" -eq 2' -fka '(__prefs-watch_custom_completion ---completion read -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" json' -l 'json' -d 'Print JSON instead.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" explain' -l 'explain' -d 'Print the key\'s value as programs read it, then its layer and file, and the suite\'s number.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion read-type -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch read-type" -eq 1' -fka '(__prefs-watch_custom_completion ---completion read-type -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch read-type" -eq 2' -fka '(__prefs-watch_custom_completion ---completion read-type -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch read-type" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion write -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch write" -eq 1' -fka '(__prefs-watch_custom_completion ---completion write -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch write" -eq 2' -fka '(__prefs-watch_custom_completion ---completion write -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" create' -l 'create' -d 'Create the suite at a path that does not end in .plist, or the directory it goes in.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch write" -ge 3' -fka '-bool -boolean -data -date -float -int -integer -string -array -array-add -dict -dict-add'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch write" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion delete -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch delete" -eq 1' -fka '(__prefs-watch_custom_completion ---completion delete -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch delete" -eq 2' -fka '(__prefs-watch_custom_completion ---completion delete -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion list -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion find -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch find" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion export -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch export" -eq 1' -fka '(__prefs-watch_custom_completion ---completion export -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch export" -eq 2' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'plist\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" format' -l 'format' -d 'xml or binary.' -rfka 'xml binary'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion import -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch import" -eq 1' -fka '(__prefs-watch_custom_completion ---completion import -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch import" -eq 2' -fa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'plist\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" merge' -l 'merge' -d 'Keep keys the file does not have.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" skip-locked' -l 'skip-locked' -d 'Leave out the keys a system layer locks, and list them, instead of refusing the whole import.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" create' -l 'create' -d 'Create the suite at a path that does not end in .plist, or the directory it goes in.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion migrate -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch migrate" -eq 1' -fka '(__prefs-watch_custom_completion ---completion migrate -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" overwrite' -l 'overwrite' -d 'Let the UserDefaults values replace the suite\'s own.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" create' -l 'create' -d 'Create the suite at a path that does not end in .plist, or the directory it goes in.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch migrate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion rename -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch rename" -eq 1' -fka '(__prefs-watch_custom_completion ---completion rename -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch rename" -eq 2' -fka '(__prefs-watch_custom_completion ---completion rename -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch rename" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion edit -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch edit" -eq 1' -fka '(__prefs-watch_custom_completion ---completion edit -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch edit" -eq 2' -fka '(__prefs-watch_custom_completion ---completion edit -- positional@1 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" create' -l 'create' -d 'Create the suite at a path that does not end in .plist.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch edit" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion locks -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch locks" -eq 1' -fka '(__prefs-watch_custom_completion ---completion locks -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch locks" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch help" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fa 'domains' -d 'List suites: names in a group or directory, or the paths of all suites.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" group' -l 'group' -d 'Look suite names up in this app group\'s container.' -rfka '(__prefs-watch_custom_completion ---completion list -- --group (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" dir' -l 'dir' -d 'Look suite names up in this directory (a container: its Library/Preferences is used when present).' -rfa '(__prefs-watch_complete_directories)'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" q quiet' -s 'q' -l 'quiet' -d 'Print no warnings of the library, only errors.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" verbose' -l 'verbose' -d 'Print what the library notices too (its info log lines).'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" lock-timeout' -l 'lock-timeout' -d 'Wait this long at most for a suite\'s lock (default 5), as PreferenceSuite.Options.lockTimeout.' -rfka ''
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" version' -l 'version' -d 'Show the version.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_flags_or_options "prefs-watch domains" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'prefs-watch' -n '__prefs-watch_should_offer_completions_for_positional "prefs-watch" -eq 1' -fka '(__prefs-watch_custom_completion ---completion tail -- positional@0 (count (__prefs-watch_tokens -pc)) (__prefs-watch_tokens -tC))'
