// dconf through its client library, as GSettings users meet it: prefs-bench's dconf peer.
//
//   dconf-peer watch          prints "ready", then "L <sent> <latency>" (nanoseconds, CLOCK_MONOTONIC)
//                             for every change of /sharedprefs-bench/stamp seen through the
//                             "changed" signal, and "end" when /sharedprefs-bench/done changes
//   dconf-peer write N GAP    writes the send time to /sharedprefs-bench/stamp N times, GAP µs
//                             apart (printing "S <sent>" for each), then /sharedprefs-bench/done
//
// Both run in one D-Bus session (dbus-run-session) with dconf-service. prefs-bench compiles it:
//   cc -O2 dconf-peer.c $(pkg-config --cflags --libs dconf) -o dconf-peer
#include <dconf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static gint64 now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (gint64)t.tv_sec * 1000000000 + t.tv_nsec;
}

static GMainLoop *loop;

static void changed(DConfClient *client, const gchar *prefix, const gchar *const *changes, const gchar *tag, gpointer data) {
    gint64 arrival = now_ns();
    for (const gchar *const *change = changes; *change; change++) {
        gchar *key = g_strconcat(prefix, *change, NULL);
        if (strcmp(key, "/sharedprefs-bench/stamp") == 0) {
            GVariant *value = dconf_client_read(client, key);
            if (value && g_variant_is_of_type(value, G_VARIANT_TYPE_INT64)) {
                gint64 sent = g_variant_get_int64(value);
                printf("L %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", sent, arrival - sent);
            }
            if (value) g_variant_unref(value);
        } else if (strcmp(key, "/sharedprefs-bench/done") == 0) {
            printf("end\n");
            g_main_loop_quit(loop);
        }
        g_free(key);
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    DConfClient *client = dconf_client_new();
    if (argc == 2 && strcmp(argv[1], "watch") == 0) {
        loop = g_main_loop_new(NULL, FALSE);
        g_signal_connect(client, "changed", G_CALLBACK(changed), NULL);
        dconf_client_watch_sync(client, "/sharedprefs-bench/");
        printf("ready\n");
        fflush(stdout);
        g_main_loop_run(loop);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "write") == 0) {
        long count = atol(argv[2]), gap = atol(argv[3]);
        for (long i = 0; i < count; i++) {
            GError *error = NULL;
            gint64 sent = now_ns();
            if (!dconf_client_write_sync(client, "/sharedprefs-bench/stamp", g_variant_new_int64(sent), NULL, NULL, &error)) {
                fprintf(stderr, "dconf-peer: write failed: %s\n", error->message);
                return 1;
            }
            printf("S %" G_GINT64_FORMAT "\n", sent);
            fflush(stdout);
            usleep(gap);
        }
        dconf_client_write_sync(client, "/sharedprefs-bench/done", g_variant_new_int64(now_ns()), NULL, NULL, NULL);
        return 0;
    }
    fprintf(stderr, "usage: dconf-peer watch | dconf-peer write COUNT GAP_MICROSECONDS\n");
    return 64;
}
